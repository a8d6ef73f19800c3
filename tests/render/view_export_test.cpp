// render/view_export: the exported page holds the view's numbers as JSON that no label can break
// out of, escapes the labels it prints itself, refuses paths it cannot write before anything is
// computed, and writes all or nothing.
#include "view_export.hpp"
#include "io/file_io.hpp"
#include "page_data.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "fixtures.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::AttentionView;
using attn::Error;
using attn::ErrorKind;
using attn::render::ExportRequest;

namespace {

// One layer, two heads, three tokens whose labels try to end the script and inject markup.
AttentionView hostile_view() {
  AttentionView v;
  v.model = "<b>model</b> & co";
  v.part = "self-attention";
  v.rows = {"</script><script>alert(1)</script>", "a&b", "<!--"};
  v.columns = v.rows;
  v.layers = 1;
  v.heads = 2;
  v.head_size = 2;
  v.weights = attn::Tensor4::from_shape({1, 2, 3, 3});
  v.queries = attn::Tensor4::from_shape({1, 2, 3, 2});
  v.keys = attn::Tensor4::from_shape({1, 2, 3, 2});
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t t = 0; t < 3; ++t)
      for (std::size_t s = 0; s < 3; ++s)
        v.weights(0, h, t, s) = s == (t + h) % 3 ? 0.8f : 0.1f;
  for (std::size_t i = 0; i < v.queries.size(); ++i) {
    v.queries.data()[i] = 0.25f * static_cast<float>(i) - 1.0f;
    v.keys.data()[i] = 0.5f - 0.125f * static_cast<float>(i);
  }
  return v;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

nlohmann::json embedded(const std::string& page) {
  return attn::testing::page_data(page);
}

ErrorKind refusal(const std::string& path) {
  try {
    attn::render::check_export_path(path);
  } catch (const Error& e) {
    CHECK(e.subject() == "export");
    CHECK(e.detail().find('\n') == std::string::npos);
    return e.kind();
  }
  FAIL("'" << path << "' was accepted");
  return ErrorKind::internal;
}

}  // namespace

TEST_CASE("no label ends the page's scripts: the JSON escapes every '<', the page escapes HTML",
          "[render][view-export]") {
  const AttentionView v = hostile_view();
  for (const char* kind : {"head", "model", "neuron"}) {
    ExportRequest request;
    request.kind = kind;
    const std::string page = attn::render::view_html(v, request);
    INFO(kind);
    // Two script elements (the data, the program), each closed once.
    CHECK(count(page, "<script") == 2);
    CHECK(count(page, "</script>") == 2);
    // One comment only: attn's mark at the top, before any label or script.
    CHECK(page.find(attn::kWrittenByComment) == page.find("<!--"));
    CHECK(page.find("<!--", page.find("<!--") + 1) == std::string::npos);
    CHECK(page.find("<b>model</b>") == std::string::npos);
    CHECK(page.find("&lt;b&gt;model&lt;/b&gt; &amp; co") != std::string::npos);
    CHECK(page.find("http://") == std::string::npos);
    CHECK(page.find("https://") == std::string::npos);
    const nlohmann::json data = embedded(page);
    CHECK(data["kind"] == kind);
    CHECK(data["model"] == v.model);
    CHECK(data["rows"].get<std::vector<std::string>>() == v.rows);
    if (request.kind == "neuron") {
      CHECK(data["neuron"]["softmax"].size() == 3);
    } else {
      CHECK(data["weights"][0][1][2][0].get<double>() == Approx(0.8).margin(1e-4));
      CHECK(data["weights"][0][1][2][1].get<double>() == Approx(0.1).margin(1e-4));
      CHECK(data["weights"][0][1][0][1].get<double>() == Approx(0.8).margin(1e-4));
    }
  }
}

TEST_CASE("the neuron view's data is the core's arithmetic for every query of the head",
          "[render][view-export]") {
  const AttentionView v = hostile_view();
  ExportRequest request;
  request.kind = "neuron";
  request.layer = 0;
  request.head = 1;
  request.token = 2;
  const nlohmann::json n = embedded(attn::render::view_html(v, request))["neuron"];
  CHECK(n["head"] == 1);
  CHECK(n["token"] == 2);
  for (std::size_t t = 0; t < 3; ++t) {
    const attn::NeuronView expected = attn::neuron_view(v, 0, 1, t);
    for (std::size_t s = 0; s < 3; ++s) {
      CHECK(n["dots"][t][s].get<double>() == Approx(expected.dots[s]).margin(1e-3));
      CHECK(n["scaled"][t][s].get<double>() == Approx(expected.scaled[s]).margin(1e-3));
      CHECK(n["softmax"][t][s].get<double>() == Approx(expected.softmax[s]).margin(1e-4));
    }
    for (std::size_t k = 0; k < 2; ++k)
      CHECK(n["queries"][t][k].get<double>() == Approx(expected.query[k]).margin(1e-3));
  }
}

TEST_CASE("view_html refuses a view, layer, head or token that does not exist",
          "[render][view-export]") {
  const AttentionView v = hostile_view();
  auto kind_of = [&](ExportRequest request) {
    try {
      attn::render::view_html(v, request);
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::internal;
  };
  ExportRequest r;
  r.kind = "attention";
  CHECK(kind_of(r) == ErrorKind::bad_value);
  r.kind = "head";
  r.layer = 1;
  CHECK(kind_of(r) == ErrorKind::bad_size);
  r.layer = 0;
  r.heads = {0, 2};
  CHECK(kind_of(r) == ErrorKind::bad_size);
  r.kind = "neuron";
  r.heads = {};
  r.token = 3;
  CHECK(kind_of(r) == ErrorKind::bad_size);
}

TEST_CASE("check_export_path takes .html, .svg and .png in a writable folder, nothing else",
          "[render][view-export]") {
  attn::testing::ScratchDir scratch("view-export-path");
  const std::string dir = scratch.path.string();
  for (const char* name : {"v.html", "V.HTML", "v.svg", "v.Png"})
    CHECK_NOTHROW(attn::render::check_export_path(dir + "/" + name));
  CHECK(refusal("") == ErrorKind::bad_file);
  CHECK(refusal(dir + "/v.htm") == ErrorKind::bad_file);
  CHECK(refusal(dir + "/v") == ErrorKind::bad_file);
  CHECK(refusal(dir + "/v.pdf") == ErrorKind::bad_file);
  CHECK(refusal(dir) == ErrorKind::bad_file);
  CHECK(refusal(dir + "/missing/v.html") == ErrorKind::bad_file);
  std::ofstream(scratch.path / "a-file") << "keep me\n";
  CHECK(refusal(dir + "/a-file/v.html") == ErrorKind::bad_file);
  REQUIRE(::mkfifo((scratch.path / "fifo.html").c_str(), 0600) == 0);
  CHECK(refusal(dir + "/fifo.html") == ErrorKind::bad_file);
  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directory(scratch.path / "locked");
    fs::permissions(scratch.path / "locked", fs::perms::owner_read | fs::perms::owner_exec);
    CHECK(refusal(dir + "/locked/v.html") == ErrorKind::bad_file);
    fs::permissions(scratch.path / "locked", fs::perms::owner_all);
  }
}

TEST_CASE("export_view replaces the file whole and leaves nothing else in its folder",
          "[render][view-export]") {
  attn::testing::ScratchDir scratch("view-export-write");
  const fs::path target = scratch.path / "view.html";
  // An older page attn wrote: only such a file is replaced (file_mark.hpp).
  std::ofstream(target) << "<!DOCTYPE html>\n" << attn::kWrittenByComment << "\nan older page\n";
  ExportRequest request;
  request.kind = "model";
  attn::render::export_view(hostile_view(), request, target.string());
  const std::string page = attn::testing::read_text(target.string());
  CHECK(page == attn::render::view_html(hostile_view(), request));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(scratch.path))
    names.push_back(e.path().filename().string());
  CHECK(names == std::vector<std::string>{"view.html"});
  // A failing export leaves the older file as it was.
  request.layer = 0;
  request.kind = "neuron";
  request.token = 7;
  CHECK_THROWS_AS(attn::render::export_view(hostile_view(), request, target.string()), Error);
  CHECK(attn::testing::read_text(target.string()) == page);
}
