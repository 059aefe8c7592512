// DOM helpers. Every piece of text, whatever its origin, reaches the page
// through text nodes or attributes; nothing here parses a string as HTML.

const SVG_NS = 'http://www.w3.org/2000/svg';

// Properties set as properties rather than attributes: their attribute
// counterparts only give the initial state.
const PROPS = new Set(['value', 'checked', 'disabled', 'selected', 'indeterminate']);

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (k === 'dataset') {
      Object.assign(el.dataset, v);
    } else if (PROPS.has(k)) {
      el[k] = v;
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

// append adds children to el: nodes as they are, strings and numbers as
// text nodes, arrays flattened, null, undefined and false skipped.
function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.append(c);
    else el.append(document.createTextNode(String(c)));
  }
  return el;
}

// h builds an HTML element: h('a', {href: '/x', class: 'c'}, 'text', child).
// Attributes named on… with a function value become event listeners.
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s builds an SVG element the way h builds HTML ones.
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

// clear removes every child of el and returns it.
export function clear(el) {
  el.replaceChildren();
  return el;
}

// The escapes the server's highlighter produces with encodeHTML (the
// default): & < > " and '.
const ENTITIES = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };

// unescapeHighlight turns the escaped text of a highlight back into plain
// text.
function unescapeHighlight(t) {
  return t.replace(/&(?:amp|lt|gt|quot|#39);/g, (m) => ENTITIES[m]);
}

// highlighted renders one highlight fragment of a search result: the parts
// between <em> and </em> become <mark> elements, everything else text.
// The fragment is HTML-escaped by the server apart from the marks, so a
// record value that itself contains "<em>" arrives as "&lt;em&gt;" and
// cannot open a mark.
export function highlighted(fragment) {
  const out = document.createDocumentFragment();
  let inMark = false;
  for (const part of fragment.split(/(<em>|<\/em>)/)) {
    if (part === '<em>') { inMark = true; continue; }
    if (part === '</em>') { inMark = false; continue; }
    if (part === '') continue;
    const text = unescapeHighlight(part);
    out.append(inMark ? h('mark', null, text) : document.createTextNode(text));
  }
  return out;
}

// confirmButton is a button that asks once more before acting: the first
// click arms it ("Confirm …"), the second runs action; it disarms itself
// after a few seconds or when it loses focus.
export function confirmButton(label, confirmLabel, action, attrs = {}) {
  let timer = 0;
  const disarm = () => {
    clearTimeout(timer);
    btn.textContent = label;
    btn.classList.remove('armed');
    delete btn.dataset.armed;
  };
  const btn = h('button', {
    type: 'button',
    class: 'danger',
    ...attrs,
    onclick: async () => {
      if (!btn.dataset.armed) {
        btn.dataset.armed = '1';
        btn.classList.add('armed');
        btn.textContent = confirmLabel;
        timer = setTimeout(disarm, 6000);
        return;
      }
      disarm();
      btn.disabled = true;
      try {
        await action();
      } finally {
        btn.disabled = false;
      }
    },
    onblur: () => { if (btn.dataset.armed) disarm(); },
  }, label);
  return btn;
}

// errorBox is a live region for the error of an action; show(err) fills
// it with err.message (or hides it for null).
export function errorBox(attrs = {}) {
  const el = h('p', { class: 'error', role: 'alert', hidden: true, ...attrs });
  el.show = (err) => {
    el.textContent = err ? (err.message || String(err)) : '';
    el.hidden = !err;
  };
  return el;
}

// field wraps a control with its label.
export function field(label, control) {
  return h('label', { class: 'field' }, h('span', { class: 'label' }, label), control);
}

// select builds a <select> from [value, label] pairs (or plain values).
export function select(attrs, options, current) {
  return h('select', attrs, options.map((o) => {
    const [value, label] = Array.isArray(o) ? o : [o, o];
    return h('option', { value, selected: value === current }, label);
  }));
}
