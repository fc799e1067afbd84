"use strict";
(function () {
  const data = JSON.parse(document.getElementById("explain-data").textContent);
  const byId = new Map(data.nodes.map((n) => [n.id, n]));
  const steps = data.steps;
  const SEQ = ["#440154", "#443983", "#31688e", "#21918c", "#35b779", "#90d743", "#fde725"];
  const DIV = ["#2166ac", "#67a9cf", "#d1e5f0", "#f7f7f7", "#fee0b6", "#f1a340", "#b35806"];
  // a leaf is done once every node that sends it a gradient has run (its .grad is complete)
  const stepOf = new Map(steps.map((id, i) => [id, i + 1]));
  const leafDone = new Map();
  for (const [child, consumer] of data.edges) {
    if (byId.get(child).kind === "leaf") leafDone.set(child, Math.max(leafDone.get(child) || 0, stepOf.get(consumer) || 0));
  }
  let pos = 0;
  let selected = null;

  function mix(stops, t) {
    t = Math.min(Math.max(t, 0), 1) * (stops.length - 1);
    const i = Math.min(Math.floor(t), stops.length - 2), f = t - i;
    const a = stops[i], b = stops[i + 1];
    let out = "#";
    for (const k of [1, 3, 5]) {
      const v = Math.round(parseInt(a.slice(k, k + 2), 16) * (1 - f) + parseInt(b.slice(k, k + 2), 16) * f);
      out += v.toString(16).padStart(2, "0");
    }
    return out;
  }
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fmt(v) { return v === null ? "nan/inf" : Number(v).toPrecision(6); }
  function nodeEls(id) { return document.querySelectorAll('[data-node="' + id + '"]'); }

  function numbers(packed, signed, kind) {
    const wrap = el("div", { class: "tensor", "data-kind": kind });
    const st = packed.stats || {};
    const lead = packed.lead.length ? " at [" + packed.lead.join(", ") + ", :, :]" : "";
    const shown = packed.data.length + " x " + (packed.data[0] || []).length;
    wrap.append(el("p", {}, kind + ": shape [" + packed.shape.join(", ") + "] " + packed.dtype + lead +
      ", showing " + shown + " of " + st.numel + " (whole tensor: min " + fmt(st.min) + ", max " + fmt(st.max) +
      ", mean " + fmt(st.mean) + ", norm " + fmt(st.norm) + ")"));
    const flat = packed.data.flat().filter((v) => v !== null);
    const lo = Math.min(0, ...flat), hi = Math.max(...flat, 1e-30);
    const top = Math.max(Math.abs(lo), Math.abs(hi), 1e-30);
    const t = el("table", { class: "nums", "aria-label": kind + " values" });
    packed.data.forEach((row, i) => {
      const tr = el("tr");
      row.forEach((v, j) => {
        const td = el("td", { "data-r": i, "data-c": j, "data-v": v === null ? "" : String(v), title: "[" + i + ", " + j + "] " + (v === null ? "nan/inf" : String(v)) }, v === null ? "?" : Number(v).toPrecision(3));
        const c = v === null ? "#888888" : signed ? mix(DIV, 0.5 + 0.5 * v / top) : mix(SEQ, hi > lo ? (v - lo) / (hi - lo) : 0.5);
        td.style.background = c;
        td.style.color = luminance(c) > 0.45 ? "#000" : "#fff";
        tr.append(td);
      });
      t.append(tr);
    });
    wrap.append(t);
    return wrap;
  }
  function luminance(c) {
    return (0.299 * parseInt(c.slice(1, 3), 16) + 0.587 * parseInt(c.slice(3, 5), 16) + 0.114 * parseInt(c.slice(5, 7), 16)) / 255;
  }

  function select(id) {
    const n = byId.get(id);
    if (!n) return;
    document.querySelectorAll(".selected").forEach((e) => e.classList.remove("selected"));
    nodeEls(id).forEach((e) => e.classList.add("selected"));
    selected = id;
    const body = document.getElementById("panel-body");
    body.replaceChildren();
    body.setAttribute("data-node", id);
    body.append(el("h3", {}, n.label + "  (" + n.op + ")"));
    const facts = el("ul", { class: "facts" });
    if (n.line) facts.append(el("li", {}, n.file + ":" + n.line + "   " + n.code));
    if (n.module) facts.append(el("li", {}, "module: " + n.module));
    if (n.step !== null && n.step !== undefined) facts.append(el("li", {}, "backward step " + (n.step + 1) + " of " + steps.length));
    facts.append(el("li", {}, "inputs: " + n.input_shapes.map((s) => (s ? "[" + s.join(", ") + "]" : "-")).join(", ") +
      "  ->  output [" + (n.shape || []).join(", ") + "] " + (n.dtype || "")));
    if (n.attention_steps) facts.append(el("li", { class: "attn" }, "attention backward: " + n.attention_steps.join(", ")));
    body.append(facts);
    body.append(el("h4", {}, "Gradient formula"));
    body.append(el("pre", { class: "formula" }, n.formula));
    if (n.check) {
      const c = n.check;
      const p = el("p", { class: "check", "data-status": c.status });
      p.append(el("span", { class: "status " + c.status.toLowerCase() }, c.status));
      p.append(document.createTextNode(c.status === "SKIP" ? " " + c.reason :
        " check it yourself: finite differences of the forward, " + c.checked + " probes (single elements and a random direction per input), max difference " + fmt(c.max_diff) + " (tolerance " + c.tolerance + ")"));
      body.append(p);
    }
    if (n.gradcheck) {
      const g = n.gradcheck;
      const p = el("p", { class: "check", "data-gradcheck": g.status });
      p.append(el("span", { class: "status " + g.status.toLowerCase() }, g.status));
      p.append(document.createTextNode(g.status === "SKIP" ? " float64 gradcheck: " + g.reason :
        " float64 gradcheck of the op's formula at all " + g.elements + " input elements"));
      body.append(p);
    }
    if (n.value) body.append(numbers(n.value, n.value.dtype !== "bool" && (n.value.stats.min || 0) < 0, "value"));
    if (n.grad) body.append(numbers(n.grad, true, n.kind === "leaf" ? "gradient (this backward)" : "incoming gradient"));
    if (n.grad_attr) body.append(numbers(n.grad_attr, true, ".grad"));
    if (n.contributions) contributions(body, n);
  }

  function contributions(body, n) {
    body.append(el("h4", {}, "Accumulation: " + n.contributions.length + " contributions, summed"));
    const box = el("div", { class: "contributions" });
    n.contributions.forEach((c, i) => {
      const src = byId.get(c.from);
      const t = numbers(c.grad, true, "contribution " + (i + 1) + " from " + (src ? src.label + " (" + src.op + ")" : c.from));
      t.setAttribute("data-contribution", i);
      box.append(t);
    });
    const sum = numbers(n.contribution_sum, true, "sum of the contributions");
    sum.setAttribute("data-contribution", "sum");
    box.append(sum);
    body.append(box);
  }

  function render() {
    document.querySelectorAll(".done, .current").forEach((e) => e.classList.remove("done", "current"));
    for (let j = 0; j < pos; j++) {
      nodeEls(steps[j]).forEach((e) => e.classList.add("done"));
    }
    for (const [leaf, at] of leafDone) {
      if (pos > 0 && at <= pos) nodeEls(leaf).forEach((e) => e.classList.add("done"));
    }
    if (pos > 0) {
      const id = steps[pos - 1];
      nodeEls(id).forEach((e) => e.classList.add("current"));
      document.querySelectorAll(".graph .node.group").forEach((g) => {
        if ((g.getAttribute("data-members") || "").split(" ").includes(id)) g.classList.add("current");
      });
    }
    const slider = document.getElementById("step-slider");
    slider.value = pos;
    slider.setAttribute("aria-valuetext", "step " + pos + " of " + steps.length);
    const status = document.getElementById("step-status");
    if (pos === 0) status.textContent = "step 0 of " + steps.length + ": nothing run yet";
    else {
      const n = byId.get(steps[pos - 1]);
      status.textContent = "step " + pos + " of " + steps.length + ": " + n.op + " (" + n.label + ")" + (pos === steps.length ? " - all done" : "");
      select(n.id);
    }
  }
  function go(p) { pos = Math.max(0, Math.min(steps.length, p)); render(); }

  function show(view) {
    document.querySelectorAll("#views .view").forEach((v) => { v.hidden = v !== view; });
    render();
  }
  function wire() {
    document.getElementById("step-next").addEventListener("click", () => go(pos + 1));
    document.getElementById("step-back").addEventListener("click", () => go(pos - 1));
    document.getElementById("step-reset").addEventListener("click", () => go(0));
    document.getElementById("step-end").addEventListener("click", () => go(steps.length));
    document.getElementById("step-slider").addEventListener("input", (e) => go(Number(e.target.value)));
    document.addEventListener("keydown", (e) => {
      if (e.target && e.target.id === "step-slider") return;
      if (e.key === "ArrowRight") { go(pos + 1); e.preventDefault(); }
      else if (e.key === "ArrowLeft") { go(pos - 1); e.preventDefault(); }
      else if ((e.key === "Enter" || e.key === " ") && e.target.getAttribute && e.target.getAttribute("data-node")) { activate(e.target); e.preventDefault(); }
    });
    document.addEventListener("click", (e) => {
      const t = e.target.closest("[data-node], [data-goto]");
      if (!t) return;
      if (t.hasAttribute("data-goto")) { e.preventDefault(); select(t.getAttribute("data-goto")); return; }
      activate(t);
    });
    const theme = document.getElementById("theme");
    theme.addEventListener("click", () => {
      const dark = document.documentElement.getAttribute("data-theme") !== "dark";
      document.documentElement.setAttribute("data-theme", dark ? "dark" : "light");
      theme.textContent = dark ? "light theme" : "dark theme";
    });
    const modules = document.getElementById("show-modules"), all = document.getElementById("show-all");
    if (modules) modules.addEventListener("click", () => show(document.querySelector('#views [data-view="modules"]')));
    if (all) all.addEventListener("click", () => show(document.querySelector('#views [data-view="full"]')));
    document.getElementById("download-trace").addEventListener("click", () => {
      const blob = new Blob([JSON.stringify(data.trace, null, 1)], { type: "application/json" });
      const a = el("a", { href: URL.createObjectURL(blob), download: "trace.json" });
      document.body.append(a);
      a.click();
      a.remove();
    });
  }
  function activate(t) {
    if (t.classList.contains("group")) {
      const g = t.getAttribute("data-group");
      const view = Array.from(document.querySelectorAll("#views .view")).find((v) => v.getAttribute("data-open") === g);
      if (view) show(view);
      return;
    }
    select(t.getAttribute("data-node"));
  }
  if (window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches) {
    document.documentElement.setAttribute("data-theme", "dark");
    document.getElementById("theme").textContent = "light theme";
  }
  wire();
  render();
  window.explainData = data;
})();
