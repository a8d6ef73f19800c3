// attn view --export: one self-contained HTML page per view. The page is static text around one
// JSON document (the view's numbers, the labels, what to show first); the inline script draws the
// view from it and makes it interactive the way bertviz's views are. No link leaves the page.
#include "view_export.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "image_file.hpp"
#include "io/file_io.hpp"
#include "view_image.hpp"

namespace attn::render {

namespace fs = std::filesystem;

namespace {

// The most weights (L x H x T x S) one page holds: about 25 MB of HTML.
constexpr std::size_t kPageMaxWeights = std::size_t{1} << 22;

// Text for HTML element content and attribute values.
std::string escape_html(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A number as JSON: a weight with 4 decimals (0.1234, 0.5, 0), any other value with 4
// significant digits; null when not finite.
void append_number(std::string& out, double x, bool weight) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  if (weight) {
    // Below half the last decimal: 0, never "-0".
    if (std::fabs(x) < 5e-5) {
      out += '0';
      return;
    }
    fmt::format_to(std::back_inserter(out), "{:.4f}", x);
    while (out.back() == '0')
      out.pop_back();
    if (out.back() == '.') out.pop_back();
  } else {
    fmt::format_to(std::back_inserter(out), "{:.4g}", x);
  }
}

// A (rows, cols) block of numbers as nested JSON arrays; `at(r, c)` gives each.
template <typename At>
void append_matrix(std::string& out, std::size_t rows, std::size_t cols, bool weight, At at) {
  out += '[';
  for (std::size_t r = 0; r < rows; ++r) {
    out += r == 0 ? "[" : ",[";
    for (std::size_t c = 0; c < cols; ++c) {
      if (c > 0) out += ',';
      append_number(out, at(r, c), weight);
    }
    out += ']';
  }
  out += ']';
}

// Every weight as (L,H,T,S) nested arrays.
void append_weights(std::string& out, const AttentionView& v) {
  const std::size_t T = v.rows.size(), S = v.columns.size();
  out += '[';
  for (std::size_t l = 0; l < v.layers; ++l) {
    out += l == 0 ? "[" : ",[";
    for (std::size_t h = 0; h < v.heads; ++h) {
      if (h > 0) out += ',';
      append_matrix(out, T, S, true,
                    [&](std::size_t t, std::size_t s) { return v.weights(l, h, t, s); });
    }
    out += ']';
  }
  out += ']';
}

void check_range(std::string_view what, std::size_t value, std::size_t count,
                 std::string_view subject) {
  if (value < count) return;
  throw Error(
      ErrorKind::bad_size, "view_html",
      fmt::format("{} {} does not exist: the view has {}, 0 to {}", what, value, count, count - 1))
      .about(std::string(subject));
}

// The view's data as one JSON document, every '<' escaped so that no label (a token such as
// "</script>") can end the script element that holds it.
std::string page_data(const AttentionView& v, const ExportRequest& r) {
  const std::size_t T = v.rows.size(), S = v.columns.size();
  nlohmann::json about = {{"kind", r.kind},       {"model", v.model},
                          {"part", v.part},       {"rows", v.rows},
                          {"columns", v.columns}, {"layers", v.layers},
                          {"heads", v.heads},     {"head_size", v.head_size},
                          {"causal", v.causal},   {"pair_split", v.pair_split},
                          {"per_row", r.per_row}};
  if (r.kind == "head") {
    about["layer"] = r.layer;
    std::vector<std::size_t> shown = r.heads;
    if (shown.empty())
      for (std::size_t h = 0; h < v.heads; ++h)
        shown.push_back(h);
    about["shown_heads"] = shown;
  }
  std::string out = about.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out.pop_back();  // the closing brace: the numbers follow
  if (r.kind == "neuron") {
    // The chosen head's arithmetic for every query token, so that the page can switch tokens.
    std::vector<NeuronView> all;
    for (std::size_t t = 0; t < T; ++t)
      all.push_back(neuron_view(v, r.layer, r.head, t));
    const std::size_t hs = v.head_size;
    out += fmt::format(",\"neuron\":{{\"layer\":{},\"head\":{},\"token\":{},\"queries\":", r.layer,
                       r.head, r.token);
    append_matrix(out, T, hs, false, [&](std::size_t t, std::size_t k) { return all[t].query[k]; });
    out += ",\"keys\":";
    append_matrix(out, S, hs, false,
                  [&](std::size_t s, std::size_t k) { return all[0].keys[s][k]; });
    out += ",\"dots\":";
    append_matrix(out, T, S, false, [&](std::size_t t, std::size_t s) { return all[t].dots[s]; });
    out += ",\"scaled\":";
    append_matrix(out, T, S, false, [&](std::size_t t, std::size_t s) { return all[t].scaled[s]; });
    out += ",\"softmax\":";
    append_matrix(out, T, S, true, [&](std::size_t t, std::size_t s) { return all[t].softmax[s]; });
    out += ",\"model\":";
    append_matrix(out, T, S, true,
                  [&](std::size_t t, std::size_t s) { return all[t].model_weights[s]; });
    // The largest |softmax recomputed - the model's weight| of each token, before rounding.
    out += ",\"apart\":[";
    for (std::size_t t = 0; t < T; ++t) {
      float apart = 0.0f;
      for (std::size_t s = 0; s < S; ++s)
        apart = std::max(apart, std::fabs(all[t].softmax[s] - all[t].model_weights[s]));
      if (t > 0) out += ',';
      fmt::format_to(std::back_inserter(out), "{:.2g}", apart);
    }
    out += "]}";
  } else {
    out += ",\"weights\":";
    append_weights(out, v);
  }
  out += '}';
  std::string safe;
  safe.reserve(out.size());
  for (char c : out) {
    if (c == '<')
      safe += "\\u003c";
    else
      safe += c;
  }
  return safe;
}

constexpr std::string_view kStyle = R"css(
:root{--ink:#1d1d1f;--muted:#5f6368;--line:#d6d6d6;--hi:#fff3c4}
*{box-sizing:border-box}
body{margin:24px 28px;font:14px/1.45 system-ui,-apple-system,"Segoe UI","DejaVu Sans",sans-serif;color:var(--ink);background:#fff}
h1{font-size:19px;margin:0 0 2px}
.about{color:var(--muted);margin:0 0 14px}
.controls{display:flex;flex-wrap:wrap;gap:8px 14px;align-items:center;margin:0 0 12px}
.controls label{color:var(--muted)}
select{font:inherit;padding:2px 4px}
.head{display:inline-flex;align-items:center;gap:6px;padding:2px 9px 2px 6px;border:1px solid var(--line);border-radius:12px;cursor:pointer;user-select:none}
.head input{margin:0}
.swatch{width:11px;height:11px;border-radius:2px;display:inline-block}
.help{color:var(--muted);font-size:12.5px;margin:6px 0 0}
svg text{font:14px "DejaVu Sans Mono",ui-monospace,Menlo,Consolas,monospace;fill:var(--ink)}
svg text.side{font:12px system-ui,"DejaVu Sans",sans-serif;fill:var(--muted)}
.tok{cursor:default}
.tok rect.hit{fill:transparent}
.tok.active rect.hit{fill:var(--hi)}
.tok.active text{font-weight:bold}
.grid{display:grid;gap:10px 10px;align-items:start}
.grid .corner,.grid .colhead,.grid .rowhead{color:var(--muted);font-size:12px}
.grid .rowhead{align-self:center;white-space:nowrap}
.thumb{border:1px solid var(--line);padding:2px;cursor:pointer;display:inline-block;line-height:0}
.thumb:hover,.thumb.pinned{border-color:var(--ink)}
.thumb canvas{image-rendering:pixelated}
.modelview{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
.detail.floating{position:fixed;top:16px;background:#fff;border:1px solid var(--line);box-shadow:0 4px 18px rgba(0,0,0,.15);padding:12px;max-height:calc(100vh - 32px);overflow:auto;z-index:1}
.detail h2,.neuron h2{font-size:15px;margin:0 0 6px}
.neuron{display:flex;gap:28px;align-items:flex-start}
.queries{display:flex;flex-direction:column;gap:1px}
.queries .q{font:13px "DejaVu Sans Mono",ui-monospace,monospace;padding:3px 8px;border-radius:3px;cursor:pointer;white-space:pre}
.queries .q.active{background:var(--hi);font-weight:bold}
.queries .q.chosen{outline:1px solid var(--ink)}
table.nt{border-collapse:collapse}
table.nt th{font-weight:normal;color:var(--muted);font-size:12px;text-align:left;padding:2px 8px 4px 0}
table.nt th.num{text-align:right}
table.nt td{padding:1px 8px 1px 0;white-space:nowrap;vertical-align:middle}
table.nt td.num{font:12.5px "DejaVu Sans Mono",ui-monospace,monospace;text-align:right}
table.nt td.tok{font:13px "DejaVu Sans Mono",ui-monospace,monospace;white-space:pre}
table.nt tr.qrow td{padding-bottom:8px}
.vec{display:inline-flex;border:1px solid var(--line)}
.vec span{display:inline-block;height:14px}
.bar{display:inline-block;height:10px;background:#4e79a7;vertical-align:middle;margin-right:6px}
.masked{color:var(--muted);font-style:italic}
)css";

constexpr std::string_view kScript = R"js(
(function () {
'use strict';
const D = JSON.parse(document.getElementById('attn-data').textContent);
const root = document.getElementById('view');
const SVG = document.getElementById('svg-namespace').namespaceURI;
const T = D.rows.length, S = D.columns.length;
const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2',
                 '#7f7f7f', '#bcbd22', '#17becf'];
function colour(h) {
  return D.heads <= PALETTE.length ? PALETTE[h] : 'hsl(' + Math.round(h * 360 / D.heads) + ',65%,45%)';
}
function el(tag, attrs, parent, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function sv(tag, attrs, parent, text) {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
// The URL's fragment, e.g. #layer=1&hover=3: where the page starts, and what a test points at.
const hash = {};
location.hash.slice(1).split('&').forEach(function (kv) {
  const i = kv.indexOf('=');
  if (i > 0) hash[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
});
function point(target) {  // the events a mouse sends when it comes over `target`
  target.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
  target.dispatchEvent(new MouseEvent('mouseenter', {bubbles: false}));
}
// A weight's colour strength: the weight, or its share of the row's largest with per_row.
function strength(w, row) {
  if (!D.per_row) return Math.min(1, Math.max(0, w));
  let top = 0;
  for (const x of row) top = Math.max(top, x);
  return top > 0 ? w / top : 0;
}
function num(x, digits) { return x === null ? '' : x.toFixed(digits); }
function textWidth(svg, labels) {
  let w = 0;
  for (const label of labels) {
    const t = sv('text', {}, svg, label);
    w = Math.max(w, t.getComputedTextLength ? t.getComputedTextLength() : 8 * label.length);
    svg.removeChild(t);
  }
  return Math.ceil(w);
}

// ---- head view: one layer, the chosen heads; queries left, keys right, a line per weight.
function headView() {
  let layer = D.layer;
  const shown = new Set(D.shown_heads);
  let hover = null;  // {side: 'q' or 'k', i}
  const bar = el('div', {class: 'controls'}, root);
  el('label', {for: 'layer'}, bar, 'Layer');
  const select = el('select', {id: 'layer'}, bar);
  for (let l = 0; l < D.layers; ++l) el('option', {value: l}, select, String(l));
  select.value = String(layer);
  select.addEventListener('change', function () { layer = Number(select.value); draw(); });
  el('label', {}, bar, 'Heads');
  const boxes = [];
  for (let h = 0; h < D.heads; ++h) {
    const chip = el('label', {class: 'head', title: 'double-click: this head alone'}, bar);
    const box = el('input', {type: 'checkbox', 'data-head': h}, chip);
    box.checked = shown.has(h);
    el('span', {class: 'swatch', style: 'background:' + colour(h)}, chip);
    el('span', {}, chip, String(h));
    box.addEventListener('change', function () {
      if (box.checked) shown.add(h); else shown.delete(h);
      draw();
    });
    chip.addEventListener('dblclick', function (e) {
      e.preventDefault();
      shown.clear();
      shown.add(h);
      boxes.forEach(function (b, k) { b.checked = k === h; });
      draw();
    });
    boxes.push(box);
  }
  const svg = sv('svg', {id: 'head-view'}, root);
  const rowHeight = 26, top = 26, across = 260, boxWidth = 8 * Math.min(D.heads, 12) + 6;
  const left = textWidth(svg, D.rows.concat(['queries'])) + 14,
        right = textWidth(svg, D.columns.concat(['keys'])) + 14;
  const x1 = left + boxWidth, x2 = x1 + across;
  const height = top + 6 + rowHeight * Math.max(T, S);
  svg.setAttribute('width', x2 + boxWidth + right);
  svg.setAttribute('height', height);
  sv('text', {x: left - 8, y: 14, 'text-anchor': 'end', class: 'side'}, svg, 'queries');
  sv('text', {x: x2 + boxWidth + 8, y: 14, class: 'side'}, svg, 'keys');
  const lineLayer = sv('g', {class: 'lines'}, svg);
  const boxLayer = sv('g', {class: 'boxes'}, svg);
  function y(i) { return top + rowHeight * i + rowHeight / 2; }
  function token(side, i, label) {
    const g = sv('g', {class: 'tok', 'data-side': side, 'data-i': i}, svg);
    const x = side === 'q' ? 0 : x2 + boxWidth;
    sv('rect', {class: 'hit', x: x, y: y(i) - rowHeight / 2, width: side === 'q' ? left : right,
                height: rowHeight, rx: 3}, g);
    sv('text', {x: side === 'q' ? left - 8 : x + 8, y: y(i) + 4.5,
                'text-anchor': side === 'q' ? 'end' : 'start'}, g, label);
    g.addEventListener('mouseenter', function () { hover = {side: side, i: i}; highlight(); });
    g.addEventListener('mouseleave', function () { hover = null; highlight(); });
    return g;
  }
  const queries = D.rows.map(function (label, i) { return token('q', i, label); });
  const keys = D.columns.map(function (label, i) { return token('k', i, label); });
  let lines = [];
  function draw() {
    lineLayer.textContent = '';
    lines = [];
    const heads = Array.from(shown).sort(function (a, b) { return a - b; });
    // The heads' lines side by side, a little apart, so that one head does not hide another.
    const apart = Math.min(3, 12 / Math.max(1, heads.length - 1));
    heads.forEach(function (h, n) {
      const W = D.weights[layer][h], dy = (n - (heads.length - 1) / 2) * apart;
      for (let t = 0; t < T; ++t) {
        for (let s = 0; s < S; ++s) {
          const o = strength(W[t][s], W[t]);
          const line = sv('line', {x1: x1, y1: y(t) + dy, x2: x2, y2: y(s) + dy, stroke: colour(h),
                                   'stroke-width': 2, 'data-h': h, 'data-q': t, 'data-k': s,
                                   'data-w': W[t][s]}, lineLayer);
          lines.push({line: line, t: t, s: s, o: o});
        }
      }
    });
    highlight();
  }
  // Hovering a query keeps only its weights (a key: only the weights into it), and beside the
  // tokens at the other end shows each head's weight as a coloured box; leaving shows them all.
  function highlight() {
    for (const x of lines) {
      const keep = !hover || (hover.side === 'q' ? x.t === hover.i : x.s === hover.i);
      x.line.setAttribute('stroke-opacity', keep ? x.o.toFixed(3) : '0');
    }
    queries.forEach(function (g, i) { g.classList.toggle('active', !!hover && hover.side === 'q' && hover.i === i); });
    keys.forEach(function (g, i) { g.classList.toggle('active', !!hover && hover.side === 'k' && hover.i === i); });
    boxLayer.textContent = '';
    document.body.setAttribute('data-hover', hover ? hover.side + hover.i : '');
    if (!hover) return;
    const heads = Array.from(shown).sort(function (a, b) { return a - b; });
    const count = hover.side === 'q' ? S : T;
    const width = Math.max(2, Math.floor((boxWidth - 6) / Math.max(1, heads.length)));
    for (let j = 0; j < count; ++j) {
      heads.forEach(function (h, n) {
        const W = D.weights[layer][h];
        const t = hover.side === 'q' ? hover.i : j, s = hover.side === 'q' ? j : hover.i;
        const x = (hover.side === 'q' ? x2 + 3 : left + 3) + n * width;
        const box = sv('rect', {x: x, y: y(j) - 8, width: width, height: 16, fill: colour(h),
                                'fill-opacity': strength(W[t][s], W[t]).toFixed(3)}, boxLayer);
        sv('title', {}, box, 'head ' + h + ': ' + num(W[t][s], 4));
      });
    }
  }
  el('p', {class: 'help'}, root,
     'Lines join each query (left) to each key (right), their opacity the weight' +
     (D.per_row ? ' against the row\u2019s largest' : '') +
     ', one colour per head. Point at a token to see only its attention; double-click a head ' +
     'to see it alone.');
  draw();
  if (hash.layer !== undefined && Number(hash.layer) < D.layers) {
    select.value = String(Number(hash.layer));
    select.dispatchEvent(new Event('change'));
  }
  if (hash.hover !== undefined) {
    const k = hash.hover[0] === 'k';
    const i = Number(k ? hash.hover.slice(1) : hash.hover);
    const target = (k ? keys : queries)[i];
    if (target) point(target);
  }
}

// A heatmap of one head, queries down, keys across, with the tokens as labels.
function heatmap(parent, W, h, cell) {
  const svg = sv('svg', {}, parent);
  // Short key labels stand upright over their columns, longer ones slant.
  const upright = D.columns.every(function (c) { return c.length <= 2; });
  const left = textWidth(svg, D.rows) + 10,
        up = upright ? 22 : textWidth(svg, D.columns) * 0.71 + 14;
  svg.setAttribute('width', left + cell * S + 30);
  svg.setAttribute('height', up + cell * T + 4);
  D.rows.forEach(function (label, t) {
    sv('text', {x: left - 6, y: up + cell * t + cell / 2 + 4.5, 'text-anchor': 'end'}, svg, label);
  });
  D.columns.forEach(function (label, s) {
    const x = left + cell * s + cell / 2, yy = up - 6;
    if (upright) sv('text', {x: x, y: yy, 'text-anchor': 'middle'}, svg, label);
    else sv('text', {x: x + 4, y: yy, transform: 'rotate(-45 ' + (x + 4) + ' ' + yy + ')'}, svg, label);
  });
  for (let t = 0; t < T; ++t) {
    for (let s = 0; s < S; ++s) {
      const r = sv('rect', {x: left + cell * s, y: up + cell * t, width: cell - 1, height: cell - 1,
                            fill: colour(h), 'fill-opacity': strength(W[t][s], W[t]).toFixed(3),
                            'data-q': t, 'data-k': s}, svg);
      sv('title', {}, r, D.rows[t] + ' \u2192 ' + D.columns[s] + ': ' + num(W[t][s], 4));
    }
  }
  sv('rect', {x: left - 0.5, y: up - 0.5, width: cell * S, height: cell * T, fill: 'none',
              stroke: '#d6d6d6'}, svg);
  return svg;
}

// ---- model view: every layer x head as a small heatmap; point at one to enlarge it, click to
// keep it.
function modelView() {
  el('p', {class: 'help', style: 'margin-bottom:12px'}, root,
     'Each small map is one head of one layer, the queries down, ' +
     'the keys across. Point at one to enlarge it; click to keep it.');
  const wrap = el('div', {class: 'modelview'}, root);
  const grid = el('div', {class: 'grid', id: 'model-grid',
                          style: 'grid-template-columns:auto repeat(' + D.heads + ',auto)'}, wrap);
  const detail = el('div', {class: 'detail', id: 'detail'}, wrap);
  // Every head of a layer across the window when it can be, at most 100 pixels a map.
  const across = Math.floor(Math.max(360, window.innerWidth - 150) / D.heads) - 16;
  const px = Math.max(1, Math.min(10, Math.floor(Math.min(100, across) / Math.max(T, S))));
  el('div', {class: 'corner'}, grid, '');
  for (let h = 0; h < D.heads; ++h) el('div', {class: 'colhead'}, grid, 'head ' + h);
  let pinned = null;
  const thumbs = [];
  // The enlarged map beside the grid when it fits there, else floating over the side of the
  // window away from the map pointed at.
  function place(box) {
    detail.classList.remove('floating');
    detail.style.left = detail.style.right = '';
    if (detail.offsetTop <= grid.offsetTop + 4) return;
    detail.classList.add('floating');
    const r = box.getBoundingClientRect();
    if (r.left + r.width / 2 > window.innerWidth / 2) detail.style.left = '16px';
    else detail.style.right = '16px';
  }
  function show(l, h) {
    detail.textContent = '';
    detail.classList.remove('floating');
    if (l === null) {
      detail.removeAttribute('data-layer');
      detail.removeAttribute('data-head');
      return;
    }
    el('h2', {}, detail, 'layer ' + l + ', head ' + h);
    heatmap(detail, D.weights[l][h], h, Math.max(12, Math.min(28, Math.floor(420 / Math.max(T, S)))));
    el('p', {class: 'help'}, detail, 'Rows are the queries, columns the keys; the colour is the weight' +
       (D.per_row ? ' against the row\u2019s largest.' : ' (0 to 1).'));
    detail.setAttribute('data-layer', l);
    detail.setAttribute('data-head', h);
    place(thumbs[l * D.heads + h]);
  }
  for (let l = 0; l < D.layers; ++l) {
    el('div', {class: 'rowhead'}, grid, 'layer ' + l);
    for (let h = 0; h < D.heads; ++h) {
      const box = el('div', {class: 'thumb', 'data-layer': l, 'data-head': h,
                             title: 'layer ' + l + ', head ' + h}, grid);
      const canvas = el('canvas', {width: S * px, height: T * px}, box);
      const g = canvas.getContext('2d');
      const W = D.weights[l][h];
      g.fillStyle = '#fff';
      g.fillRect(0, 0, S * px, T * px);
      g.fillStyle = colour(h);
      for (let t = 0; t < T; ++t) {
        for (let s = 0; s < S; ++s) {
          g.globalAlpha = strength(W[t][s], W[t]);
          g.fillRect(s * px, t * px, px, px);
        }
      }
      box.addEventListener('mouseenter', function () { show(l, h); });
      box.addEventListener('mouseleave', function () {
        if (pinned) show(pinned[0], pinned[1]); else show(null);
      });
      box.addEventListener('click', function () {
        thumbs.forEach(function (b) { b.classList.remove('pinned'); });
        pinned = pinned && pinned[0] === l && pinned[1] === h ? null : [l, h];
        if (pinned) box.classList.add('pinned');
        show(l, h);
      });
      thumbs.push(box);
    }
  }
  show(null);
  if (hash.open !== undefined) {
    const lh = hash.open.split(',').map(Number);
    const target = thumbs[lh[0] * D.heads + lh[1]];
    if (target && lh[1] < D.heads) target.click();
  }
}

// ---- neuron view: one head, one query token; how its row of weights is made from q and each k.
function neuronView() {
  const N = D.neuron, hs = D.head_size;
  el('p', {class: 'about'}, root, 'layer ' + N.layer + ', head ' + N.head +
     ': pick a query on the left; each row is one key.');
  const wrap = el('div', {class: 'neuron'}, root);
  const list = el('div', {class: 'queries'}, wrap);
  el('h2', {}, list, 'queries');
  const panel = el('div', {id: 'neuron-panel'}, wrap);
  let chosen = N.token;
  const items = D.rows.map(function (label, t) {
    const q = el('div', {class: 'q', 'data-i': t}, list, label);
    q.addEventListener('mouseenter', function () { show(t); });
    q.addEventListener('mouseleave', function () { show(chosen); });
    q.addEventListener('click', function () { chosen = t; show(t); });
    return q;
  });
  const cell = Math.max(3, Math.min(14, Math.floor(200 / hs)));
  function largest(rows) {
    let m = 0;
    for (const r of rows) for (const x of r) m = Math.max(m, Math.abs(x));
    return m;
  }
  function vector(parent, values, top) {
    const v = el('span', {class: 'vec'}, parent);
    for (const x of values) {
      const a = top > 0 ? Math.min(1, Math.abs(x) / top) : 0;
      el('span', {style: 'width:' + cell + 'px;background:' + (x >= 0 ? 'rgba(31,119,180,' : 'rgba(255,127,14,') + a.toFixed(3) + ')',
                  title: x.toFixed(4)}, v);
    }
    return v;
  }
  function show(t) {
    items.forEach(function (q, i) {
      q.classList.toggle('active', i === t);
      q.classList.toggle('chosen', i === chosen);
    });
    panel.textContent = '';
    panel.setAttribute('data-token', t);
    const q = N.queries[t];
    const products = N.keys.map(function (k) { return k.map(function (x, i) { return x * q[i]; }); });
    const topQK = Math.max(largest([q]), largest(N.keys)), topP = largest(products);
    el('h2', {}, panel, 'query ' + t + ' \u201c' + D.rows[t] + '\u201d');
    const table = el('table', {class: 'nt'}, panel);
    const head = el('tr', {}, table);
    ['', 'q and each k (' + hs + ' numbers)', 'q\u2218k', 'q\u00b7k', '\u00f7\u221a' + hs, 'softmax'].forEach(function (x, i) { el('th', i === 3 || i === 4 ? {class: 'num'} : {}, head, x); });
    const qrow = el('tr', {class: 'qrow'}, table);
    el('td', {class: 'tok'}, qrow, 'q');
    vector(el('td', {}, qrow), q, topQK);
    for (let i = 0; i < 4; ++i) el('td', {}, qrow);
    for (let s = 0; s < S; ++s) {
      const masked = D.causal && s > t;
      const tr = el('tr', {'data-k': s}, table);
      el('td', {class: 'tok'}, tr, D.columns[s]);
      vector(el('td', {}, tr), N.keys[s], topQK);
      vector(el('td', {}, tr), products[s], topP);
      if (masked) {
        el('td', {class: 'num masked'}, tr, 'masked');
        el('td', {class: 'num'}, tr, '');
      } else {
        el('td', {class: 'num'}, tr, num(N.dots[t][s], 3));
        el('td', {class: 'num'}, tr, num(N.scaled[t][s], 3));
      }
      const w = el('td', {class: 'num', style: 'text-align:left'}, tr);
      el('span', {class: 'bar', style: 'width:' + Math.round(120 * N.softmax[t][s]) + 'px'}, w);
      el('span', {}, w, num(N.softmax[t][s], 4));
    }
    el('p', {class: 'help'}, panel, 'Blue is positive, orange negative, by size against the ' +
       'largest in the block. softmax(q\u00b7k \u00f7 \u221a' + hs + ') recomputed here is the row the model ' +
       'computed: largest |difference| ' + N.apart[t] + (N.apart[t] <= 1e-5 ? ' \u2713' : ' \u2717'));
  }
  show(chosen);
  if (hash.hover !== undefined && items[Number(hash.hover)]) point(items[Number(hash.hover)]);
}

({head: headView, model: modelView, neuron: neuronView})[D.kind]();
})();
)js";

std::string page_title(const AttentionView& v, const ExportRequest& r) {
  return fmt::format("attn view {}: {}", r.kind, v.model);
}

std::string page_about(const AttentionView& v) {
  return fmt::format("{} · {} · {} layer{} × {} head{} · {} token{}{}", v.model, v.part, v.layers,
                     v.layers == 1 ? "" : "s", v.heads, v.heads == 1 ? "" : "s", v.rows.size(),
                     v.rows.size() == 1 ? "" : "s",
                     v.columns == v.rows ? "" : fmt::format(" against {}", v.columns.size()));
}

}  // namespace

void check_export_path(const std::string& path) {
  check_output_file(path, {".html", ".svg", ".png"}, "view.html", "export");
}

std::string view_html(const AttentionView& v, const ExportRequest& r) {
  if (r.kind != "head" && r.kind != "model" && r.kind != "neuron")
    throw Error("view_html",
                fmt::format("'{}' is not a view: use head, model or neuron", printable(r.kind)));
  if (r.kind != "model") check_range("layer", r.layer, v.layers, "layer");
  if (r.kind == "head")
    for (std::size_t h : r.heads)
      check_range("head", h, v.heads, "heads");
  if (r.kind == "neuron") {
    check_range("head", r.head, v.heads, "head");
    check_range("query token", r.token, v.rows.size(), "token");
  }
  const std::size_t count = v.layers * v.heads * v.rows.size() * v.columns.size();
  if (count > kPageMaxWeights)
    throw Error(
        ErrorKind::too_large, "view_html",
        fmt::format("the page would hold {} weights ({} layers x {} heads x {} x {} "
                    "tokens), more than {}: give a shorter <text>",
                    count, v.layers, v.heads, v.rows.size(), v.columns.size(), kPageMaxWeights))
        .about("text");
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += fmt::format("<title>{}</title>\n", escape_html(page_title(v, r)));
  page += "<style>";
  page += kStyle;
  page += "</style>\n</head>\n<body>\n";
  page += fmt::format("<h1>attn view {}</h1>\n<p class=\"about\" id=\"about\">{}</p>\n",
                      escape_html(r.kind), escape_html(page_about(v)));
  page += "<div id=\"view\"></div>\n";
  page += "<svg id=\"svg-namespace\" width=\"0\" height=\"0\" style=\"position:absolute\"></svg>\n";
  page += "<script type=\"application/json\" id=\"attn-data\">";
  page += page_data(v, r);
  page += "</script>\n<script>";
  page += kScript;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

void export_view(const AttentionView& view, const ExportRequest& request, const std::string& path) {
  check_export_path(path);
  const std::string ext = extension_of(path);
  if (ext == ".svg" || ext == ".png") {
    write_view_image(view, request, path);
    return;
  }
  write_file_whole(path, view_html(view, request), "export");
}

}  // namespace attn::render
