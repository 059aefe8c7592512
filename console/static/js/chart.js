// Hand-drawn SVG charts: horizontal bars for groups, a line for a time
// series. Sizes follow the container's width, so text keeps its size on a
// phone; colours come from the style sheet.

import { s, clear } from './dom.js';

const ROW = 26;
const FONT = 12;

function fmt(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '—';
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
}

function shorten(text, max) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

// widthOf is the drawing width for a container: its width, within bounds.
function widthOf(box) {
  return Math.max(280, Math.min(1200, box.clientWidth || 640));
}

// redrawOnResize draws now and again whenever the container's width
// changes.
function redrawOnResize(box, draw) {
  let last = 0;
  const run = () => {
    const w = widthOf(box);
    if (w === last) return;
    last = w;
    clear(box).append(draw(w));
  };
  run();
  if (window.ResizeObserver) new ResizeObserver(run).observe(box);
}

// barChart draws data ([{label, value}]) as horizontal bars into box.
export function barChart(box, data, title) {
  redrawOnResize(box, (w) => {
    const longest = Math.max(4, ...data.map((d) => d.label.length));
    const labelW = Math.min(Math.round(w * 0.38), 12 + longest * 7);
    const valueW = 64;
    const barMax = w - labelW - valueW - 8;
    const max = Math.max(0, ...data.map((d) => (Number.isFinite(d.value) ? d.value : 0)));
    const height = Math.max(ROW, data.length * ROW) + 8;
    const svg = s('svg', {
      id: 'bar-chart', class: 'chart', role: 'img', width: w, height,
      viewBox: `0 0 ${w} ${height}`, 'aria-label': title,
    }, s('title', null, title));
    data.forEach((d, i) => {
      const y = 4 + i * ROW;
      const v = Number.isFinite(d.value) ? d.value : 0;
      const bw = max > 0 ? Math.max(v > 0 ? 2 : 0, Math.round((v / max) * barMax)) : 0;
      svg.append(s('g', { class: 'row', dataset: { label: d.label } },
        s('title', null, `${d.label}: ${fmt(d.value)}`),
        s('text', { x: labelW - 6, y: y + ROW / 2, class: 'label', 'text-anchor': 'end', 'dominant-baseline': 'middle', 'font-size': FONT },
          shorten(d.label, Math.max(6, Math.floor(labelW / 7)))),
        s('rect', { x: labelW, y: y + 3, width: bw, height: ROW - 6, rx: 2, class: 'bar' }),
        s('text', { x: labelW + bw + 6, y: y + ROW / 2, class: 'value', 'dominant-baseline': 'middle', 'font-size': FONT }, fmt(d.value))));
    });
    return svg;
  });
}

// timeChart draws points ([{t: Date, label, value}], value null for no
// data) as a line over time into box.
export function timeChart(box, points, title) {
  redrawOnResize(box, (w) => {
    const H = 240;
    const m = { l: 52, r: 16, t: 12, b: 30 };
    const iw = w - m.l - m.r;
    const ih = H - m.t - m.b;
    const vals = points.map((p) => p.value).filter((v) => Number.isFinite(v));
    const max = Math.max(0, ...vals) || 1;
    const min = Math.min(0, ...vals);
    const t0 = points.length ? points[0].t.getTime() : 0;
    const t1 = points.length ? points[points.length - 1].t.getTime() : 1;
    const x = (t) => m.l + (t1 === t0 ? iw / 2 : ((t - t0) / (t1 - t0)) * iw);
    const y = (v) => m.t + ih - ((v - min) / (max - min)) * ih;
    const svg = s('svg', {
      id: 'time-chart', class: 'chart', role: 'img', width: w, height: H,
      viewBox: `0 0 ${w} ${H}`, 'aria-label': title,
    }, s('title', null, title));
    // Axes and grid lines at min, middle and max.
    for (const v of [min, (min + max) / 2, max]) {
      svg.append(
        s('line', { x1: m.l, x2: w - m.r, y1: y(v), y2: y(v), class: 'grid-line' }),
        s('text', { x: m.l - 6, y: y(v), class: 'label', 'text-anchor': 'end', 'dominant-baseline': 'middle', 'font-size': FONT }, fmt(v)));
    }
    const ticks = points.length <= 3 ? points : [points[0], points[Math.floor(points.length / 2)], points[points.length - 1]];
    ticks.forEach((p, i) => {
      const anchor = ticks.length === 1 ? 'middle' : i === 0 ? 'start' : i === ticks.length - 1 ? 'end' : 'middle';
      svg.append(s('text', { x: x(p.t.getTime()), y: H - 8, class: 'label', 'text-anchor': anchor, 'font-size': FONT }, p.label));
    });
    // The line, broken where a bucket has no value, with the area under it.
    let line = '';
    let run = [];
    const flush = () => {
      if (run.length === 0) return;
      line += run.map((p, i) => `${i ? 'L' : 'M'}${x(p.t.getTime()).toFixed(1)},${y(p.value).toFixed(1)}`).join('');
      if (run.length > 1) {
        const base = y(Math.max(min, 0)).toFixed(1);
        svg.append(s('path', {
          class: 'area',
          d: `M${x(run[0].t.getTime()).toFixed(1)},${base}${run.map((p) => `L${x(p.t.getTime()).toFixed(1)},${y(p.value).toFixed(1)}`).join('')}L${x(run[run.length - 1].t.getTime()).toFixed(1)},${base}Z`,
        }));
      }
      run = [];
    };
    for (const p of points) {
      if (Number.isFinite(p.value)) run.push(p);
      else flush();
    }
    flush();
    if (line) svg.append(s('path', { class: 'line', d: line }));
    for (const p of points) {
      if (!Number.isFinite(p.value)) continue;
      svg.append(s('circle', { class: 'point', cx: x(p.t.getTime()), cy: y(p.value), r: 3.5, dataset: { key: p.key } },
        s('title', null, `${p.label}: ${fmt(p.value)}`)));
    }
    return svg;
  });
}

export { fmt };
