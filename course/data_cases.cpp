#include "data_cases.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"
#include "value_tree.hpp"

namespace attn::course {

namespace fs = std::filesystem;
using grading::Node;
using grading::Tag;

namespace {

constexpr std::size_t kMaxCaseBytes = 64 << 20;
const char* const kCaseErrorMark = "attn data case: ";  // what data_probe.hpp's CaseError says

// The .npy files the case being read names (parse_case collects them).
std::vector<std::string>& npy_files() {
  static thread_local std::vector<std::string> files;
  return files;
}

Error case_error(const fs::path& file, const std::string& what) {
  return Error(ErrorKind::bad_value, "assignments",
               fmt::format("{}: {}", file.filename().string(), what));
}

// Python's json writes NaN, Infinity and -Infinity bare, which JSON has not: outside strings they
// become the strings "NaN", "Infinity" and "-Infinity", which read as those numbers.
std::string quote_non_finite(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const char* word : {"-Infinity", "Infinity", "NaN"}) {
      const std::size_t n = std::char_traits<char>::length(word);
      const bool starts =
          i == 0 || std::string(",[: \t\r\n").find(text[i - 1]) != std::string::npos;
      if (starts && text.compare(i, n, word) == 0) {
        out += fmt::format("\"{}\"", word);
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

Node number_node(double value) {
  Node node;
  node.tag = Tag::f64;
  node.number = value;
  return node;
}

// An array's numbers as nested lists, its last axis innermost.
Node array_node(const Array& array) {
  if (array.rank() == 0) return number_node(array.real(0));
  std::size_t at = 0;
  const auto build = [&](auto&& self, std::size_t axis) -> Node {
    Node level;
    level.tag = Tag::group;
    for (std::size_t i = 0; i < array.shape[axis]; ++i) {
      if (axis + 1 < array.rank()) {
        level.items.push_back(self(self, axis + 1));
      } else if (is_floating(array.dtype)) {
        level.items.push_back(number_node(array.real(at++)));
      } else {
        Node integer;
        integer.tag = Tag::i64;
        integer.integer = array.integer(at++);
        level.items.push_back(integer);
      }
    }
    return level;
  };
  return build(build, 0);
}

// A JSON value as a value tree: lists are groups, {"npy": FILE} the file's array as nested lists.
Node to_node(const nlohmann::json& value, const fs::path& file, int depth = 0) {
  if (depth > 16) throw case_error(file, "lists nested more than 16 deep");
  Node node;
  if (value.is_null()) {
    node.none = true;
  } else if (value.is_boolean()) {
    node.tag = Tag::boolean;
    node.flag = value.get<bool>();
  } else if (value.is_number_unsigned() &&
             value.get<std::uint64_t>() >
                 static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    node.tag = Tag::u64;
    node.natural = value.get<std::uint64_t>();
  } else if (value.is_number_integer()) {
    node.tag = Tag::i64;
    node.integer = value.get<std::int64_t>();
  } else if (value.is_number()) {
    node = number_node(value.get<double>());
  } else if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (text == "NaN") return number_node(std::numeric_limits<double>::quiet_NaN());
    if (text == "Infinity") return number_node(std::numeric_limits<double>::infinity());
    if (text == "-Infinity") return number_node(-std::numeric_limits<double>::infinity());
    node.tag = Tag::text;
    node.text = text;
  } else if (value.is_array()) {
    node.tag = Tag::group;
    for (const auto& item : value)
      node.items.push_back(to_node(item, file, depth + 1));
  } else if (value.is_object() && value.size() == 1 && value.contains("npy") &&
             value["npy"].is_string()) {
    const std::string name = value["npy"].get<std::string>();
    if (name.empty() || name.find('/') != std::string::npos || name.starts_with(".")) {
      throw case_error(
          file, fmt::format("\"npy\": \"{}\" must name a file beside the case", printable(name)));
    }
    npy_files().push_back(name);
    const Array array = read_npy((file.parent_path() / name).string());
    return array_node(array);
  } else {
    throw case_error(file,
                     "a value must be a number, true or false, text, a list, null or "
                     "{\"npy\": \"file.npy\"}");
  }
  return node;
}

std::string encoded(const Node& node) {
  grading::Writer out;
  grading::encode_node(out, node);
  return out.take();
}

DataCase parse_case(const fs::path& file) {
  const std::vector<unsigned char> bytes = read_file(file.string(), file.filename().string());
  if (bytes.size() > kMaxCaseBytes) throw case_error(file, "larger than 64 MiB");
  const nlohmann::json json = nlohmann::json::parse(
      quote_non_finite(std::string(bytes.begin(), bytes.end())), nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    throw case_error(file,
                     "not a JSON object: write {\"name\": ..., \"call\": ..., "
                     "\"arguments\": [...], \"expected\": ...}");
  }
  static const std::set<std::string> kFields = {"name",   "call",   "arguments", "expected",
                                                "throws", "points", "hidden",    "tolerance"};
  for (const auto& [key, value] : json.items()) {
    if (kFields.count(key) == 0) {
      throw case_error(file, fmt::format("unknown field \"{}\": the fields are name, call, "
                                         "arguments, expected or throws, points, hidden and "
                                         "tolerance",
                                         printable(key)));
    }
  }
  DataCase c;
  c.file = file;
  npy_files().clear();
  if (!json.contains("name") || !json["name"].is_string() ||
      json["name"].get<std::string>().empty() || json["name"].get<std::string>().size() > 200) {
    throw case_error(file, "\"name\" must be the test's name, 1 to 200 characters");
  }
  c.name = json["name"].get<std::string>();
  for (const char ch : c.name) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      throw case_error(file, "\"name\" must hold no control characters");
  }
  static const std::regex identifier(R"([A-Za-z_][A-Za-z0-9_]{0,99})");
  if (!json.contains("call") || !json["call"].is_string() ||
      !std::regex_match(json["call"].get<std::string>(), identifier)) {
    throw case_error(file,
                     "\"call\" must name the exercise's function, e.g. \"softmax\" for "
                     "attn::exercise::softmax");
  }
  c.call = json["call"].get<std::string>();
  if (!json.contains("arguments") || !json["arguments"].is_array() ||
      json["arguments"].size() > 16) {
    throw case_error(file, "\"arguments\" must be a list of the call's arguments (at most 16)");
  }
  const Node arguments = to_node(json["arguments"], file);
  c.arity = arguments.items.size();
  c.arguments = encoded(arguments);
  const bool expects = json.contains("expected"), throws = json.contains("throws");
  if (expects == throws) {
    throw case_error(file,
                     "give \"expected\" (the value returned) or \"throws\" (the exception "
                     "expected, e.g. \"std::invalid_argument\"), one of them");
  }
  if (expects) {
    c.expected = encoded(to_node(json["expected"], file));
  } else {
    static const std::regex exception(R"(std::[a-z_]{1,40})");
    if (!json["throws"].is_string() ||
        !std::regex_match(json["throws"].get<std::string>(), exception)) {
      throw case_error(file,
                       "\"throws\" must name a standard exception, e.g. "
                       "\"std::invalid_argument\"");
    }
    c.throws = json["throws"].get<std::string>();
  }
  c.npy_files = npy_files();
  if (json.contains("points")) {
    if (!json["points"].is_number() || !(json["points"].get<double>() >= 0.0) ||
        json["points"].get<double>() > 1000.0) {
      throw case_error(file, "\"points\" must be a number from 0 to 1000");
    }
    c.points = json["points"].get<double>();
  }
  if (json.contains("hidden")) {
    if (!json["hidden"].is_boolean()) throw case_error(file, "\"hidden\" must be true or false");
    c.hidden = json["hidden"].get<bool>();
  }
  if (json.contains("tolerance")) {
    const auto& tolerance = json["tolerance"];
    const auto good = [&](const char* key) {
      return !tolerance.contains(key) ||
             (tolerance[key].is_number() && tolerance[key].get<double>() >= 0.0 &&
              tolerance[key].get<double>() <= 1.0);
    };
    if (!tolerance.is_object() || !good("atol") || !good("rtol") ||
        tolerance.size() != static_cast<std::size_t>(tolerance.contains("atol")) +
                                static_cast<std::size_t>(tolerance.contains("rtol"))) {
      throw case_error(file, "\"tolerance\" must be {\"atol\": A, \"rtol\": R}, each from 0 to 1");
    }
    c.atol = tolerance.value("atol", c.atol);
    c.rtol = tolerance.value("rtol", c.rtol);
  }
  return c;
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

bool fits(const Node& node, const std::vector<std::size_t>& shape, std::size_t level) {
  if (level == shape.size()) return node.is_number();
  if (node.none || node.tag != Tag::group || node.items.size() != shape[level]) return false;
  for (const Node& item : node.items) {
    if (!fits(item, shape, level + 1)) return false;
  }
  return true;
}

// The sizes of `node` read as a nested list of numbers, the same at every level; false when it
// is not one.
bool nested_shape(const Node& node, std::vector<std::size_t>& shape) {
  shape.clear();
  const Node* at = &node;
  while (!at->none && at->tag == Tag::group) {
    shape.push_back(at->items.size());
    if (at->items.empty()) break;
    at = &at->items.front();
  }
  return fits(node, shape, 0);
}

void flatten(const Node& node, std::vector<double>& out) {
  if (node.is_number()) {
    out.push_back(node.as_double());
    return;
  }
  for (const Node& item : node.items)
    flatten(item, out);
}

std::string number_text(double value) {
  return fmt::format("{:.7g}", value);
}

bool close_enough(double got, double want, double atol, double rtol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

std::string index_text(std::size_t flat, const std::vector<std::size_t>& shape) {
  std::vector<std::size_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % std::max<std::size_t>(shape[d], 1);
    flat /= std::max<std::size_t>(shape[d], 1);
  }
  std::string text = "[";
  for (std::size_t d = 0; d < index.size(); ++d)
    text += (d == 0 ? "" : ", ") + std::to_string(index[d]);
  return text + "]";
}

std::string kind_of(const Node& node) {
  if (node.none) return "null";
  switch (node.tag) {
    case Tag::tensor:
      return "a tensor of shape " + shape_text(node.shape);
    case Tag::group:
      return fmt::format("a list or struct of {} values", node.items.size());
    case Tag::text:
      return "text";
    case Tag::boolean:
      return "a bool";
    default:
      return "a number";
  }
}

// "" when `got` matches `want` within the tolerance, else what differs; `where` names the place.
std::string compare(const Node& got, const Node& want, const DataCase& c,
                    const std::string& where) {
  const std::string at = where.empty() ? "" : where + ": ";
  if (want.none) return "";  // null: not compared
  if (got.tag == Tag::tensor) {
    std::vector<std::size_t> shape;
    if (!nested_shape(want, shape) || shape != got.shape) {
      return fmt::format("{}returned {}, expected {}", at, kind_of(got),
                         nested_shape(want, shape) ? "shape " + shape_text(shape) : kind_of(want));
    }
    std::vector<double> expected;
    flatten(want, expected);
    std::size_t differ = 0, first = 0;
    double worst = 0.0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (!close_enough(got.data[i], expected[i], c.atol, c.rtol)) {
        if (differ++ == 0) first = i;
        // A NaN got (or an infinity against another) is the largest difference of all.
        const double difference = std::fabs(got.data[i] - expected[i]);
        worst = std::isnan(difference) || std::isnan(worst) ? difference + worst
                                                            : std::max(worst, difference);
      }
    }
    if (differ == 0) return "";
    return fmt::format(
        "{}{} of {} elements differ beyond atol {:g} + rtol {:g} x |expected| (largest difference "
        "{}); the first at {}: got {}, expected {}",
        at, differ, expected.size(), c.atol, c.rtol, number_text(worst),
        index_text(first, got.shape), number_text(got.data[first]), number_text(expected[first]));
  }
  if (got.is_number()) {
    if (!want.is_number())
      return fmt::format("{}returned a number, expected {}", at, kind_of(want));
    const bool exact = got.tag == Tag::i64 || got.tag == Tag::u64;
    const bool same = exact && (want.tag == Tag::i64 || want.tag == Tag::u64)
                          ? got.as_double() == want.as_double()
                          : close_enough(got.as_double(), want.as_double(), c.atol, c.rtol);
    if (same) return "";
    return fmt::format("{}got {}, expected {}", at, number_text(got.as_double()),
                       number_text(want.as_double()));
  }
  if (got.tag == Tag::boolean) {
    if (want.tag != Tag::boolean || want.none)
      return fmt::format("{}returned a bool, expected {}", at, kind_of(want));
    return got.flag == want.flag ? ""
                                 : fmt::format("{}got {}, expected {}", at, got.flag, want.flag);
  }
  if (got.tag == Tag::text) {
    if (want.tag != Tag::text)
      return fmt::format("{}returned text, expected {}", at, kind_of(want));
    return got.text == want.text ? ""
                                 : fmt::format("{}got \"{}\", expected \"{}\"", at,
                                               printable(got.text), printable(want.text));
  }
  if (want.tag != Tag::group || want.items.size() != got.items.size()) {
    return fmt::format("{}returned {}, expected {}", at, kind_of(got), kind_of(want));
  }
  std::string found;
  for (std::size_t i = 0; i < got.items.size() && found.empty(); ++i) {
    found = compare(got.items[i], want.items[i], c,
                    where.empty() ? fmt::format("value {}", i) : fmt::format("{}, {}", where, i));
  }
  return found;
}

Node decoded(const std::string& bytes) {
  grading::Reader in(bytes.data(), bytes.size());
  return grading::decode_node(in);
}

}  // namespace

std::string encode_array(const Array& array) {
  return encoded(array_node(array));
}

std::string encode_arguments(const std::vector<const Array*>& arguments) {
  Node list;
  list.tag = Tag::group;
  for (const Array* argument : arguments) {
    if (argument != nullptr) {
      list.items.push_back(array_node(*argument));
    } else {
      list.items.emplace_back();
      list.items.back().none = true;
    }
  }
  return encoded(list);
}

std::string compare_value(const std::string& got, int field, const std::string& expected,
                          double atol, double rtol) {
  try {
    const Node value = decoded(got);
    const Node* part = &value;
    if (field >= 0) {
      if (value.tag != Tag::group || static_cast<std::size_t>(field) >= value.items.size())
        return fmt::format("returned {}, not a struct with a field {}", kind_of(value), field);
      part = &value.items[static_cast<std::size_t>(field)];
    }
    DataCase c;
    c.atol = atol;
    c.rtol = rtol;
    return compare(*part, decoded(expected), c, "");
  } catch (const grading::DeliveryError& e) {
    return fmt::format("what came back could not be read: {}", e.what());
  }
}

std::optional<Array> value_array(const std::string& value, int field) {
  try {
    const Node node = decoded(value);
    const Node* part = &node;
    if (field >= 0) {
      if (node.tag != Tag::group || static_cast<std::size_t>(field) >= node.items.size())
        return std::nullopt;
      part = &node.items[static_cast<std::size_t>(field)];
    }
    if (part->tag != Tag::tensor || part->none) return std::nullopt;
    return make_float32(part->shape, part->data);
  } catch (const grading::DeliveryError&) {
    return std::nullopt;
  }
}

std::vector<DataCase> read_data_cases(const fs::path& lesson_folder) {
  const fs::path folder = lesson_folder / "cases";
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return {};
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<DataCase> cases;
  std::map<std::string, fs::path> names;
  for (const fs::path& file : files) {
    cases.push_back(parse_case(file));
    const auto [it, fresh] = names.emplace(cases.back().name, file);
    if (!fresh) {
      throw case_error(file, fmt::format("\"name\" is also {}'s: each case needs a name of its own",
                                         it->second.filename().string()));
    }
  }
  return cases;
}

std::string data_probe_key(const DataCase& c) {
  return fmt::format("{}/{}", c.call, c.arity);
}

std::string data_probe_source(const std::string& header, const std::vector<DataCase>& cases) {
  std::vector<std::pair<std::string, DataCase>> calls;  // one per key
  for (const DataCase& c : cases) {
    const std::string key = data_probe_key(c);
    if (std::none_of(calls.begin(), calls.end(), [&](const auto& k) { return k.first == key; }))
      calls.emplace_back(key, c);
  }
  std::string source = fmt::format(
      "// The probe of the exercise's data cases, written by attn grade.\n"
      "#include \"{}\"\n#include \"data_probe.hpp\"\n\nnamespace {{\n\n"
      "using attn::grading::data::Arguments;\n\n",
      header);
  std::string entries;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const DataCase& c = calls[i].second;
    std::string arguments;
    for (std::size_t a = 0; a < c.arity; ++a)
      arguments += fmt::format("{}a[{}]", a == 0 ? "" : ", ", a);
    source += fmt::format(
        "void call_{}(const Arguments& a) {{\n"
        "  attn::grading::data::send_call(\"{}\", [&] {{ return attn::exercise::{}({}); }});\n"
        "}}\n\n",
        i, c.call, c.call, arguments);
    entries += fmt::format("    {{\"{}\", &call_{}}},\n", calls[i].first, i);
  }
  source += fmt::format(
      "const attn::grading::data::Entry kEntries[] = {{\n{}}};\n\n}}  // namespace\n\n"
      "int main(int argc, char** argv) {{\n"
      "  return attn::grading::data::main(argc, argv, kEntries, {});\n}}\n",
      entries, calls.size());
  return source;
}

DataVerdict judge_data_case(const DataCase& c, const std::string& channel) {
  DataVerdict verdict;
  bool whole = false;
  const std::vector<grading::Record> records = grading::parse_records(channel, &whole);
  if (!whole || records.size() != 2 || records.back().kind != grading::RecordKind::end) {
    verdict.evidence = fmt::format("{} sent no result: the call did not return", c.call);
    return verdict;
  }
  const grading::Record& result = records.front();
  try {
    grading::Reader in(result.payload.data(), result.payload.size());
    if (result.kind == grading::RecordKind::thrown) {
      std::string type, what;
      grading::decode_into(in, type);
      grading::decode_into(in, what);
      if (what.starts_with(kCaseErrorMark)) {
        verdict.evidence = fmt::format(
            "the case's arguments do not fit {}'s parameters ({}): tell your instructor", c.call,
            what.substr(std::char_traits<char>::length(kCaseErrorMark)));
      } else if (!c.throws.empty() && type == c.throws) {
        verdict.passed = true;
      } else if (!c.throws.empty()) {
        verdict.evidence =
            fmt::format("{} threw {} ({}), expected {}", c.call, type, what, c.throws);
      } else {
        verdict.evidence = fmt::format("{} threw {}: {}", c.call, type, what);
      }
      return verdict;
    }
    const Node got = grading::decode_node(in);
    if (!c.throws.empty()) {
      verdict.evidence =
          fmt::format("{} returned {}, expected it to throw {}", c.call, kind_of(got), c.throws);
      return verdict;
    }
    grading::Reader expected_in(c.expected.data(), c.expected.size());
    const Node want = grading::decode_node(expected_in);
    const std::string difference = compare(got, want, c, "");
    verdict.passed = difference.empty();
    if (!verdict.passed) verdict.evidence = fmt::format("{}(...) {}", c.call, difference);
  } catch (const grading::DeliveryError& e) {
    verdict.evidence = fmt::format("what {} returned could not be read: {}", c.call, e.what());
  }
  return verdict;
}

}  // namespace attn::course
