// An instructor's test cases as data: <lesson folder>/cases/<name>.json, each one call of a
// function of the exercise with its arguments and the value expected back, made by the
// instructor's own reference (NumPy, PyTorch), with its points, visibility and tolerance:
//
//   {"name": "gelu of a 2x3 input", "call": "gelu", "arguments": [[[0.5, -1, 2], [0, 3, -3]]],
//    "expected": [[0.3457, -0.1587, 1.9545], [0, 2.9964, -0.0036]],
//    "points": 2, "hidden": false, "tolerance": {"atol": 1e-4, "rtol": 1e-4}}
//
// Arguments are numbers, true/false, text, nested lists (a tensor or a vector), {"npy": "x.npy"}
// (a file beside the case) and null (a null pointer); NaN, Infinity and -Infinity as Python's json
// writes them. "expected" is the value returned: a number, a nested list for a tensor, a list of
// the fields for a struct (null: not compared); or "throws": "std::invalid_argument" instead.
// attn writes a probe that calls the function with the arguments converted to its parameters'
// types (course/harness/data_probe.hpp), links it with the student's code, runs it confined like
// every test, and compares what came back itself.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/array.hpp"

namespace attn::course {

struct DataCase {
  std::filesystem::path file;  // <folder>/cases/<name>.json
  std::string name;            // the test's name in every report
  std::string call;            // the function, in namespace attn::exercise
  std::size_t arity = 0;       // the arguments given
  std::string arguments;       // in the bytes of course/harness/values.hpp
  std::string expected;        // the expected value, in the same bytes; "" with `throws`
  std::string throws;          // the exception expected instead, e.g. "std::invalid_argument"
  std::vector<std::string> npy_files;  // the .npy files beside it that it reads
  double points = 1.0;
  bool hidden = false;
  double atol = 1e-5;
  double rtol = 1e-4;
};

// The cases of the lesson folder's cases/ (none when it has no such folder), by file name;
// attn::Error naming the file and what is wrong with it otherwise.
std::vector<DataCase> read_data_cases(const std::filesystem::path& lesson_folder);

// The probe program's source for `cases` of the exercise whose header is `header`
// ("gelu_exercise.hpp"): one entry per function and number of arguments.
std::string data_probe_source(const std::string& header, const std::vector<DataCase>& cases);
// The probe's first argument for `c`: "gelu/2".
std::string data_probe_key(const DataCase& c);

struct DataVerdict {
  bool passed = false;
  std::string evidence;  // expected versus got, for the student
};
// Decides `c` from what its probe sent (the records of course/harness/values.hpp), all of it
// whole and ended: the value returned, compared with the expected one within the tolerance, or
// the exception thrown.
DataVerdict judge_data_case(const DataCase& c, const std::string& channel);

// An array as a case's argument or expected value (nested lists of its numbers), in the bytes of
// course/harness/values.hpp.
std::string encode_array(const Array& array);
// A call's arguments, each an array or, when null, a null pointer.
std::string encode_arguments(const std::vector<const Array*>& arguments);
// "" when `got` (a value a probe sent, or one field of it: `field` >= 0 picks a struct's field)
// matches `expected` within atol + rtol * |expected|, else what differs; `call` names the
// function in the text.
std::string compare_value(const std::string& got, int field, const std::string& expected,
                          double atol, double rtol);
// The tensor in `value` (or its field `field`), as a float32 array; nullopt when it holds none.
std::optional<Array> value_array(const std::string& value, int field);

}  // namespace attn::course
