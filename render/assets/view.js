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
// A weight's colour strength: the weight, or with per_row its share of the row's largest, unless
// the row (layer l, head h, query t) is near uniform: then the weight, so that it stays faint.
function flat(l, h, t) { return D.row_near_uniform[l][h][t] === 1; }
function strength(w, row, uniform) {
  if (!D.per_row || uniform) return Math.min(1, Math.max(0, w));
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
          const o = strength(W[t][s], W[t], flat(layer, h, t));
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
                                'fill-opacity': strength(W[t][s], W[t], flat(layer, h, t)).toFixed(3)},
                           boxLayer);
        sv('title', {}, box, 'head ' + h + ': ' + num(W[t][s], 4));
      });
    }
  }
  el('p', {class: 'help'}, root,
     'Lines join each query (left) to each key (right), one colour per head, their opacity ' +
     'the weight' + (D.per_row ? ' (' + D.legend_per_row + ')' : '') +
     '. Point at a token to see only its attention; double-click a head ' +
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

// A heatmap of head h of layer l, queries down, keys across, with the tokens as labels; per row,
// each row's H = entropy / ln n after it, "\u2248" marking a near-uniform row.
function heatmap(parent, l, h, cell) {
  const W = D.weights[l][h];
  const svg = sv('svg', {}, parent);
  // Short key labels stand upright over their columns, longer ones slant.
  const upright = D.columns.every(function (c) { return c.length <= 2; });
  const left = textWidth(svg, D.rows) + 10,
        up = upright ? 22 : textWidth(svg, D.columns) * 0.71 + 14;
  svg.setAttribute('width', left + cell * S + (D.per_row ? 84 : 30));
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
                            fill: colour(h),
                            'fill-opacity': strength(W[t][s], W[t], flat(l, h, t)).toFixed(3),
                            'data-q': t, 'data-k': s}, svg);
      sv('title', {}, r, D.rows[t] + ' \u2192 ' + D.columns[s] + ': ' + num(W[t][s], 4));
    }
    if (D.per_row && S > 1) {
      sv('text', {x: left + cell * S + 6, y: up + cell * t + cell / 2 + 4.5, class: 'spread',
                  'data-q': t, 'data-near-uniform': flat(l, h, t) ? 1 : 0},
         svg, 'H ' + num(D.row_entropy[l][h][t], 2) + (flat(l, h, t) ? ' \u2248' : ''));
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
    heatmap(detail, l, h, Math.max(12, Math.min(28, Math.floor(420 / Math.max(T, S)))));
    el('p', {class: 'help'}, detail, 'Rows are the queries, columns the keys; the colour is the weight' +
       (D.per_row ? ', ' + D.legend_per_row + ', marked \u2248.' : ' (0 to 1).'));
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
          g.globalAlpha = strength(W[t][s], W[t], flat(l, h, t));
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
  // The diverging map at t in [0, 1]: D.signed_colours' five stops, interpolated linearly as
  // the pictures' diverging_color does.
  const stops = D.signed_colours.map(function (hex) {
    return [1, 3, 5].map(function (i) { return parseInt(hex.slice(i, i + 2), 16); });
  });
  function signed(t) {
    const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
    const i = Math.min(Math.floor(x), stops.length - 2), f = x - i;
    const c = [0, 1, 2].map(function (k) { return Math.round(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f); });
    return 'rgb(' + c.join(',') + ')';
  }
  function vector(parent, values, top) {
    const v = el('span', {class: 'vec'}, parent);
    for (const x of values) {
      const t = top > 0 ? 0.5 + 0.5 * x / top : 0.5;
      el('span', {style: 'width:' + cell + 'px;background:' + signed(t), title: x.toFixed(4)}, v);
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
    el('p', {class: 'help'}, panel, 'Colour: ' + D.legend_signed + '. softmax(q\u00b7k \u00f7 \u221a' + hs + ') recomputed here is the row the model ' +
       'computed: largest |difference| ' + N.apart[t] + (N.apart[t] <= 1e-5 ? ' \u2713' : ' \u2717'));
  }
  show(chosen);
  if (hash.hover !== undefined && items[Number(hash.hover)]) point(items[Number(hash.hover)]);
}

({head: headView, model: modelView, neuron: neuronView})[D.kind]();
})();
