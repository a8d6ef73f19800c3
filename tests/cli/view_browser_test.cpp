// attn view --export's pages in a real browser: Debian's chromium, headless, loads each page from
// a file with nothing else (no network), runs its script, and prints the DOM it ends with or a
// screenshot. Hovering is tested without a driver: the page reads a URL fragment (#hover=3) and
// sends token 3 the events a mouse sends, through the same handlers; the DOM then shows the
// lines' opacities, which must keep only that token's weights. setup.sh installs chromium; these
// tests fail, rather than skip, when it is missing.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "page_data.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::read_text;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {

constexpr const char* kChromium = "/usr/bin/chromium";

struct Browser {
  int exit_code = -1;
  std::string out, err;
};

// Runs chromium headless on `url` with `flags`, at most 60 seconds, in a profile and HOME of its
// own under `dir`.
Browser chromium(const fs::path& dir, const std::vector<std::string>& flags,
                 const std::string& url) {
  const fs::path profile = dir / "chromium-profile", out = dir / "chromium.out",
                 err = dir / "chromium.err";
  fs::create_directories(profile);
  std::vector<std::string> args = {"timeout",           "60",
                                   kChromium,           "--headless=new",
                                   "--no-sandbox",      "--disable-gpu",
                                   "--no-first-run",    "--disable-extensions",
                                   "--hide-scrollbars", "--user-data-dir=" + profile.string()};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back(url);
  const pid_t pid = fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, STDOUT_FILENO);
    dup2(e, STDERR_FILENO);
    setenv("HOME", profile.c_str(), 1);
    std::vector<char*> argv;
    for (std::string& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp("timeout", argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Browser b;
  b.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  b.out = read_text(out.string());
  b.err = read_text(err.string());
  return b;
}

// The DOM chromium ends with, for the page at `path` with `fragment` ("" or "hover=3").
std::string dom(const fs::path& dir, const fs::path& path, const std::string& fragment) {
  REQUIRE(fs::exists(kChromium));  // setup.sh installs chromium, for these tests
  const Browser b = chromium(dir, {"--dump-dom"},
                             "file://" + path.string() + (fragment.empty() ? "" : "#" + fragment));
  INFO("chromium's stderr: " << b.err);
  REQUIRE(b.exit_code == 0);
  REQUIRE(b.out.find("</html>") != std::string::npos);
  return b.out;
}

fs::path export_view(const fs::path& dir, const std::string& name, std::vector<std::string> args) {
  const fs::path path = dir / name;
  args.insert(args.begin(), "view");
  args.insert(args.end(), {"--export", path.string()});
  const auto run = run_attn(args);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  return path;
}

nlohmann::json embedded(const std::string& page) {
  return attn::testing::page_data(page);
}

// The attributes of every `tag` element in `html`, as the browser serialised them.
std::vector<std::map<std::string, std::string>> elements(const std::string& html,
                                                         const std::string& tag) {
  static const std::regex attribute(R"re(([a-z-]+)="([^"]*)")re");
  const std::regex element("<" + tag + R"re(( [^>]*)>)re");
  std::vector<std::map<std::string, std::string>> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), element);
       it != std::sregex_iterator(); ++it) {
    const std::string attrs = (*it)[1].str();
    std::map<std::string, std::string> found;
    for (auto a = std::sregex_iterator(attrs.begin(), attrs.end(), attribute);
         a != std::sregex_iterator(); ++a)
      found[(*a)[1].str()] = (*a)[2].str();
    out.push_back(std::move(found));
  }
  return out;
}

// A head view line: its head, query, key, weight and the opacity the page gave it.
struct Line {
  int head, query, key;
  double weight, opacity;
};

std::vector<Line> lines(const std::string& html) {
  std::vector<Line> out;
  for (auto& a : elements(html, "line"))
    out.push_back({std::stoi(a.at("data-h")), std::stoi(a.at("data-q")), std::stoi(a.at("data-k")),
                   std::stod(a.at("data-w")), std::stod(a.at("stroke-opacity"))});
  return out;
}

std::string attribute_of(const std::string& html, const std::string& id, const std::string& name) {
  for (auto& a : elements(html, "[a-z0-9]+"))
    if (a.count("id") > 0 && a["id"] == id) return a.count(name) > 0 ? a[name] : "(none)";
  return "(no element " + id + ")";
}

}  // namespace

TEST_CASE("in a browser, the head view draws every weight, and hovering a token keeps only its own",
          "[cli][view][export][browser]") {
  ScratchDir scratch("view-browser-head");
  const fs::path page = export_view(scratch.path, "head.html", {"head", "--checkpoint", "reverse"});
  const nlohmann::json data = embedded(read_text(page.string()));
  const nlohmann::json& w = data["weights"];
  REQUIRE(data["per_row"] == false);

  // At rest: a line per weight of every head of layer 0, its opacity the weight.
  const std::string rest = dom(scratch.path, page, "");
  const std::vector<Line> all = lines(rest);
  REQUIRE(all.size() == 2 * 8 * 8);
  std::set<int> visible_queries;
  for (const Line& l : all) {
    CHECK(l.weight == Approx(w[0][l.head][l.query][l.key].get<double>()).margin(1e-9));
    CHECK(l.opacity == Approx(l.weight).margin(1e-3));
    if (l.opacity > 0.01) visible_queries.insert(l.query);
  }
  CHECK(visible_queries.size() == 8);

  // Pointing at query 3: only its row's lines stay, with the same opacities; beside each key a
  // box per head shows the weight.
  const std::string hovered = dom(scratch.path, page, "hover=3");
  CHECK(hovered.find("data-hover=\"q3\"") != std::string::npos);
  const std::vector<Line> some = lines(hovered);
  REQUIRE(some.size() == all.size());
  std::size_t shown = 0;
  for (std::size_t i = 0; i < some.size(); ++i) {
    const Line& l = some[i];
    INFO("head " << l.head << " query " << l.query << " key " << l.key);
    if (l.query == 3) {
      CHECK(l.opacity == Approx(all[i].opacity).margin(1e-9));
      shown += l.opacity > 0.0;
    } else {
      CHECK(l.opacity == 0.0);
    }
  }
  CHECK(shown > 0);
  CHECK(hovered != rest);
  std::size_t boxes = 0;
  for (auto& a : elements(hovered, "rect"))
    boxes += a.count("fill-opacity") > 0;
  CHECK(boxes == 2 * 8);

  // Pointing at key 2: only the weights into it.
  for (const Line& l : lines(dom(scratch.path, page, "hover=k2")))
    if (l.opacity > 0.0) CHECK(l.key == 2);

  // The layer selector: layer 1's weights.
  for (const Line& l : lines(dom(scratch.path, page, "layer=1")))
    CHECK(l.weight == Approx(w[1][l.head][l.query][l.key].get<double>()).margin(1e-9));
}

TEST_CASE("in a browser, the model view enlarges a head and the neuron view follows the query",
          "[cli][view][export][browser]") {
  ScratchDir scratch("view-browser-model");
  const fs::path model =
      export_view(scratch.path, "model.html", {"model", "--checkpoint", "reverse"});
  const std::string opened = dom(scratch.path, model, "open=1,1");
  CHECK(attribute_of(opened, "detail", "data-layer") == "1");
  CHECK(attribute_of(opened, "detail", "data-head") == "1");
  std::size_t cells = 0;
  for (auto& a : elements(opened, "rect"))
    cells += a.count("data-q") > 0;
  CHECK(cells == 8 * 8);
  CHECK(elements(opened, "canvas").size() == 2 * 2);

  const fs::path neuron = export_view(scratch.path, "neuron.html",
                                      {"neuron", "--checkpoint", "reverse", "--token", "1"});
  CHECK(attribute_of(dom(scratch.path, neuron, ""), "neuron-panel", "data-token") == "1");
  const std::string pointed = dom(scratch.path, neuron, "hover=5");
  CHECK(attribute_of(pointed, "neuron-panel", "data-token") == "5");
  std::size_t keys = 0;
  for (auto& a : elements(pointed, "tr"))
    keys += a.count("data-k") > 0;
  CHECK(keys == 8);
  CHECK(pointed.find("largest |difference|") != std::string::npos);
}

TEST_CASE("in a browser, each view's screenshot is a picture of the window's size, not a blank",
          "[cli][view][export][browser]") {
  ScratchDir scratch("view-browser-screenshot");
  REQUIRE(fs::exists(kChromium));  // setup.sh installs chromium, for these tests
  for (const char* kind : {"head", "model", "neuron"}) {
    INFO(kind);
    const fs::path page =
        export_view(scratch.path, std::string(kind) + ".html", {kind, "--checkpoint", "reverse"});
    const fs::path png = scratch.path / (std::string(kind) + ".png");
    const Browser b =
        chromium(scratch.path, {"--screenshot=" + png.string(), "--window-size=1000,700"},
                 "file://" + page.string() + (kind == std::string("head") ? "#hover=3" : ""));
    INFO("chromium's stderr: " << b.err);
    REQUIRE(b.exit_code == 0);
    cairo_surface_t* surface = cairo_image_surface_create_from_png(png.c_str());
    REQUIRE(cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS);
    const int width = cairo_image_surface_get_width(surface),
              height = cairo_image_surface_get_height(surface),
              stride = cairo_image_surface_get_stride(surface);
    CHECK(width == 1000);
    CHECK(height == 700);
    const unsigned char* pixels = cairo_image_surface_get_data(surface);
    std::size_t ink = 0, coloured = 0;
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) {
        const auto* p = pixels + y * stride + 4 * x;  // B, G, R, A in native order
        const int b = p[0], g = p[1], r = p[2];
        ink += (r < 240 || g < 240 || b < 240);
        coloured += std::max({r, g, b}) - std::min({r, g, b}) > 60;
      }
    cairo_surface_destroy(surface);
    CHECK(ink > static_cast<std::size_t>(width * height / 200));
    CHECK(coloured > 200);  // the heads' colours, not only black text
  }
}

TEST_CASE("in a browser, per row a near-uniform row keeps its weights' opacity and says its H",
          "[cli][view][export][browser]") {
  ScratchDir scratch("view-browser-per-row");
  // sort's layer-0 heads spread almost evenly (H near 1): the rows a per-row scale made solid.
  const fs::path model = export_view(scratch.path, "model.html",
                                     {"model", "--checkpoint", "sort", "--heatmap-scale", "row"});
  const nlohmann::json data = embedded(read_text(model.string()));
  REQUIRE(data["per_row"] == true);
  const std::string opened = dom(scratch.path, model, "open=0,0");
  const auto& W = data["weights"][0][0];
  std::map<int, std::string> flat;  // query -> its H text's data-near-uniform
  for (auto& a : elements(opened, "text"))
    if (a.count("data-near-uniform") > 0)
      flat[std::stoi(a.at("data-q"))] = a.at("data-near-uniform");
  REQUIRE(flat.size() == W.size());
  std::size_t uniform = 0;
  std::map<int, double> top;  // query -> its largest opacity
  for (auto& a : elements(opened, "rect")) {
    if (a.count("data-q") == 0) continue;
    const int t = std::stoi(a.at("data-q")), s = std::stoi(a.at("data-k"));
    const double opacity = std::stod(a.at("fill-opacity")), w = W[t][s].get<double>();
    top[t] = std::max(top[t], opacity);
    if (flat[t] == "1") CHECK(opacity == Approx(w).margin(1e-3));
  }
  for (const auto& [t, near] : flat) {
    CHECK(near == (data["row_near_uniform"][0][0][t] == 1 ? "1" : "0"));
    uniform += near == "1";
    // A near-uniform row never reaches full colour; any other row's largest weight does.
    if (near == "1")
      CHECK(top[t] < 0.5);
    else
      CHECK(top[t] == Approx(1.0));
  }
  CHECK(uniform > 0);
}
