// export_html_report: one self-contained HTML file (inline CSS, JavaScript
// and SVG; nothing fetched from the network) with the advice, a zoomable
// timeline per thread, a bar chart of self time per op, the memory timeline
// and the key_averages table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>

#include "brisk/profiler.h"
#include "io/atomic_write.h"
#include "io/json.h"
#include "profiler/advisor.h"

namespace brisk::profiler {

namespace {

/// The timeline draws at most this many events (the longest ones); a
/// browser stays responsive with that many in a canvas.
constexpr size_t kMaxTimelineEvents = 200'000;
/// Bars in the self-time chart.
constexpr size_t kMaxBars = 25;
/// Points of the memory chart.
constexpr size_t kMaxMemoryPoints = 2000;

std::string escape_html(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// A JSON string literal that is also safe inside <script>: no '<' or '>'
// (so no "</script>" or "<!--" in the data).
void append_js_string(std::string& out, const std::string& s) {
  std::string q;
  json::append_quoted(q, s);
  for (char c : q) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else out += c;
  }
}

std::string format_bytes(int64_t b) {
  char buf[64];
  double v = static_cast<double>(b);
  double a = std::abs(v);
  if (a >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GB", v / (1024.0 * 1024 * 1024));
  else if (a >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.2f MB", v / (1024.0 * 1024));
  else if (a >= 1024.0) std::snprintf(buf, sizeof buf, "%.2f KB", v / 1024.0);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}

std::string format_pct(int64_t part, int64_t total) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", total > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(total) : 0.0);
  return buf;
}

std::string shapes_text(const Event& e) {
  std::string s;
  for (size_t k = 0; k < e.shapes.size(); ++k) {
    if (k) s += ", ";
    s += "[";
    for (size_t d = 0; d < e.shapes[k].size(); ++d) {
      if (d) s += ", ";
      s += std::to_string(e.shapes[k][d]);
    }
    s += "]";
    if (k < e.dtypes.size() && !e.dtypes[k].empty()) s += " " + e.dtypes[k];
  }
  return s;
}

const char* kCss = R"CSS(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { background: #1d2330; color: #fff; padding: 14px 24px; }
header h1 { margin: 0; font-size: 20px; }
header p { margin: 4px 0 0; color: #c5cad6; }
nav { padding: 8px 24px; background: #e8ebf0; }
nav a { margin-right: 18px; color: #2a55c4; text-decoration: none; }
section { background: #fff; margin: 16px 24px; padding: 12px 18px; border-radius: 6px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
h2 { font-size: 17px; margin: 4px 0 10px; }
.finding { border-left: 4px solid #d9534f; padding: 6px 12px; margin: 10px 0; background: #fdf3f2; }
.finding .rule { font: 12px monospace; background: #d9534f; color: #fff; padding: 1px 6px; border-radius: 3px; }
.finding .cost { color: #6b7280; }
.finding ul { margin: 4px 0; }
.finding .fix { margin: 4px 0 0; }
.none { color: #2e7d32; }
#tl-wrap { position: relative; }
#tl { width: 100%; display: block; border: 1px solid #d6d9e0; cursor: grab; }
#tip { position: absolute; pointer-events: none; background: rgba(29,35,48,.95); color: #fff; padding: 6px 9px;
       border-radius: 4px; font-size: 12px; display: none; max-width: 480px; white-space: pre-wrap; z-index: 2; }
.controls button { margin-right: 6px; }
.controls span { color: #6b7280; margin-left: 8px; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
table.ops { border-collapse: collapse; font-size: 13px; width: 100%; }
table.ops th, table.ops td { padding: 3px 8px; border-bottom: 1px solid #eceef2; text-align: right; white-space: nowrap; }
table.ops th { cursor: pointer; background: #f0f2f5; position: sticky; top: 0; }
table.ops td:first-child, table.ops th:first-child { text-align: left; white-space: normal; }
pre { font-size: 12px; overflow: auto; }
svg text { font: 11px system-ui, sans-serif; fill: #1d2330; }
)CSS";

// Kind colours, in EventKind order (the legend and the canvas share them).
const char* kKindColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759",
                              "#c0392b", "#76b7b2", "#edc948", "#9c755f", "#bab0ac"};
constexpr EventKind kKinds[] = {EventKind::Op,     EventKind::Backward,       EventKind::UserScope,
                                EventKind::OptimizerStep, EventKind::DataLoaderWait, EventKind::Sync,
                                EventKind::Copy,   EventKind::Kernel,         EventKind::Memcpy,
                                EventKind::Memset};

const char* kTimelineJs = R"JS(
(function () {
  const D = BRISK_DATA, cv = document.getElementById('tl'), tip = document.getElementById('tip');
  const ctx = cv.getContext('2d'), LABEL = 130, ROW = 17, GAP = 8, AXIS = 22, MAXROWS = 14;
  // Lanes: one per thread, as many rows as its deepest event (capped).
  const lanes = [], byThread = new Map();
  for (const e of D.ev) byThread.set(e[0], Math.max(byThread.get(e[0]) ?? 0, e[1]));
  let y = AXIS;
  for (const t of [...byThread.keys()].sort((a, b) => a - b)) {
    const rows = Math.min(byThread.get(t) + 1, MAXROWS);
    lanes[t] = { y, rows };
    y += rows * ROW + GAP;
  }
  const height = Math.max(y, AXIS + 40);
  const T0 = 0, T1 = Math.max(D.duration, 1);
  let t0 = T0, t1 = T1;
  function fmt(ns) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (ns >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (ns >= 1e3) return (ns / 1e3).toFixed(3) + ' us';
    return Math.round(ns) + ' ns';
  }
  function resize() {
    const r = window.devicePixelRatio || 1;
    cv.width = cv.clientWidth * r; cv.height = height * r; cv.style.height = height + 'px';
    ctx.setTransform(r, 0, 0, r, 0, 0);
    draw();
  }
  const W = () => cv.clientWidth - LABEL;
  const X = (t) => LABEL + (t - t0) / (t1 - t0) * W();
  function draw() {
    ctx.clearRect(0, 0, cv.clientWidth, height);
    ctx.font = '11px system-ui, sans-serif';
    // Axis.
    const span = t1 - t0, step = Math.pow(10, Math.floor(Math.log10(span / 8)));
    const tick = [1, 2, 5, 10].map(m => m * step).find(s => span / s <= 10);
    ctx.fillStyle = '#6b7280'; ctx.strokeStyle = '#eceef2';
    for (let t = Math.ceil(t0 / tick) * tick; t <= t1; t += tick) {
      const x = X(t);
      ctx.beginPath(); ctx.moveTo(x, AXIS - 4); ctx.lineTo(x, height); ctx.stroke();
      ctx.fillText(fmt(t), x + 2, 12);
    }
    // Events.
    const scale = W() / span;
    for (const e of D.ev) {
      const lane = lanes[e[0]];
      if (e[1] >= lane.rows) continue;
      const s = e[2], d = e[3];
      if (s + d < t0 || s > t1) continue;
      const x = Math.max(LABEL, X(s)), x2 = Math.min(LABEL + W(), X(s + d));
      const w = Math.max(x2 - x, 1), yy = lane.y + e[1] * ROW;
      ctx.fillStyle = D.colours[e[5]];
      ctx.fillRect(x, yy, w, ROW - 2);
      if (w > 40) {
        ctx.save(); ctx.beginPath(); ctx.rect(x, yy, w - 2, ROW); ctx.clip();
        ctx.fillStyle = '#fff'; ctx.fillText(D.names[e[4]], x + 3, yy + ROW - 5); ctx.restore();
      }
    }
    // Thread labels over the left margin.
    ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, LABEL - 1, height);
    ctx.fillStyle = '#1d2330';
    lanes.forEach((lane, t) => { if (lane) ctx.fillText(D.threads[t] ?? ('thread ' + t), 4, lane.y + 12); });
    document.getElementById('tl-range').textContent = fmt(t0) + ' .. ' + fmt(t1) + '  (' + fmt(span) + ' shown)';
  }
  function zoom(f, at) {
    const c = t0 + (at - LABEL) / W() * (t1 - t0);
    let n0 = c - (c - t0) * f, n1 = c + (t1 - c) * f;
    if (n1 - n0 < 100) return;  // 100 ns: finer than the clock
    if (n1 - n0 > T1 - T0) { n0 = T0; n1 = T1; }
    if (n0 < T0) { n1 += T0 - n0; n0 = T0; }
    if (n1 > T1) { n0 -= n1 - T1; n1 = T1; }
    t0 = Math.max(n0, T0); t1 = n1; draw();
  }
  cv.addEventListener('wheel', ev => { ev.preventDefault(); zoom(ev.deltaY > 0 ? 1.25 : 0.8, ev.offsetX); }, { passive: false });
  let drag = null;
  cv.addEventListener('mousedown', ev => { drag = { x: ev.clientX, t0, t1 }; cv.style.cursor = 'grabbing'; });
  window.addEventListener('mouseup', () => { drag = null; cv.style.cursor = 'grab'; });
  window.addEventListener('mousemove', ev => {
    if (!drag) return;
    let dt = (drag.x - ev.clientX) / W() * (drag.t1 - drag.t0);
    dt = Math.max(T0 - drag.t0, Math.min(T1 - drag.t1, dt));
    t0 = drag.t0 + dt; t1 = drag.t1 + dt; draw();
  });
  cv.addEventListener('dblclick', () => { t0 = T0; t1 = T1; draw(); });
  cv.addEventListener('mousemove', ev => {
    if (drag) { tip.style.display = 'none'; return; }
    const t = t0 + (ev.offsetX - LABEL) / W() * (t1 - t0), px = (t1 - t0) / W();
    let hit = null;
    for (const e of D.ev) {
      const lane = lanes[e[0]], yy = lane.y + e[1] * ROW;
      if (e[1] >= lane.rows || ev.offsetY < yy || ev.offsetY >= yy + ROW) continue;
      if (t >= e[2] - px && t <= e[2] + e[3] + px) { hit = e; break; }
    }
    if (!hit || ev.offsetX < LABEL) { tip.style.display = 'none'; return; }
    let text = D.names[hit[4]] + '  [' + D.kinds[hit[5]] + ']\n' + fmt(hit[3]) + ' at ' + fmt(hit[2]);
    if (hit.length > 6) text += '\n' + D.extra[hit[6]];
    tip.textContent = text; tip.style.display = 'block';
    tip.style.left = Math.min(ev.offsetX + 14, cv.clientWidth - 300) + 'px'; tip.style.top = (ev.offsetY + 14) + 'px';
  });
  cv.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
  document.getElementById('zin').onclick = () => zoom(0.5, LABEL + W() / 2);
  document.getElementById('zout').onclick = () => zoom(2, LABEL + W() / 2);
  document.getElementById('zreset').onclick = () => { t0 = T0; t1 = T1; draw(); };
  window.addEventListener('resize', resize);
  resize();
})();
// Sortable table: click a header; numbers sort by their data-v.
document.querySelectorAll('table.ops th').forEach((th, col) => {
  th.addEventListener('click', () => {
    const body = th.closest('table').tBodies[0], rows = [...body.rows];
    const desc = th.dataset.desc !== '1'; th.dataset.desc = desc ? '1' : '0';
    const key = r => { const c = r.cells[col]; return c.dataset.v !== undefined ? +c.dataset.v : c.textContent; };
    rows.sort((a, b) => { const x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * (desc ? -1 : 1); });
    rows.forEach(r => body.appendChild(r));
  });
});
)JS";

void append_advice(std::string& h, const std::vector<Finding>& findings) {
  h += "<section id=\"advice\"><h2>Advice</h2>\n";
  if (findings.empty()) {
    h += "<p class=\"none\">No findings: none of the advisor's rules matched this profile.</p>\n";
  }
  for (const Finding& f : findings) {
    h += "<div class=\"finding\"><span class=\"rule\">";
    h += rule_name(f.rule);
    h += "</span> <b>" + escape_html(f.title) + "</b> <span class=\"cost\">" + std::to_string(f.count) +
         (f.count == 1 ? " time, " : " times, ") + advisor::format_duration(f.time_ns) + "</span>\n<ul>";
    for (const std::string& w : f.where) h += "<li><code>" + escape_html(w) + "</code></li>";
    h += "</ul><p class=\"fix\"><b>Fix:</b> " + escape_html(f.fix) + "</p></div>\n";
  }
  h += "</section>\n";
}

void append_timeline(std::string& h, const ProfileResult& r) {
  // The events drawn: all, or the longest kMaxTimelineEvents.
  std::vector<size_t> shown(r.events.size());
  std::iota(shown.begin(), shown.end(), size_t{0});
  if (shown.size() > kMaxTimelineEvents) {
    std::nth_element(shown.begin(), shown.begin() + kMaxTimelineEvents, shown.end(), [&](size_t a, size_t b) {
      return r.events[a].duration_ns() > r.events[b].duration_ns();
    });
    shown.resize(kMaxTimelineEvents);
    std::sort(shown.begin(), shown.end());
  }
  std::string js = "const BRISK_DATA = {\"duration\":";
  int64_t duration = r.duration_ns;
  for (const Event& e : r.events) duration = std::max(duration, e.end_ns);
  js += std::to_string(duration);
  js += ",\"threads\":[";
  for (size_t t = 0; t < r.threads.size(); ++t) {
    if (t) js += ',';
    append_js_string(js, r.threads[t]);
  }
  js += "],\"kinds\":[";
  for (size_t k = 0; k < std::size(kKinds); ++k) {
    if (k) js += ',';
    append_js_string(js, kind_name(kKinds[k]));
  }
  js += "],\"colours\":[";
  for (size_t k = 0; k < std::size(kKindColours); ++k) {
    if (k) js += ',';
    append_js_string(js, kKindColours[k]);
  }
  // Names and tooltip texts are interned; an event is
  // [thread, depth, start, duration, name, kind(, extra)].
  std::unordered_map<std::string, size_t> name_ids, extra_ids;
  std::vector<const std::string*> names;
  std::vector<std::string> extras;
  std::string evs;
  for (size_t i : shown) {
    const Event& e = r.events[i];
    auto [it, fresh] = name_ids.emplace(e.name, names.size());
    if (fresh) names.push_back(&it->first);
    std::string extra;
    if (!e.shapes.empty()) extra += "inputs: " + shapes_text(e);
    if (!e.detail.empty()) extra += (extra.empty() ? "" : "\n") + std::string("detail: ") + e.detail;
    std::vector<std::string> scopes = advisor::scopes_of(r, i);
    if (!scopes.empty()) {
      extra += extra.empty() ? "scopes: " : "\nscopes: ";
      for (size_t k = 0; k < scopes.size(); ++k) extra += (k ? " > " : "") + scopes[k];
    }
    if (e.self_alloc_bytes > 0) extra += (extra.empty() ? "" : "\n") + std::string("allocated: ") + format_bytes(e.self_alloc_bytes);
    if (e.recorded_graph) extra += extra.empty() ? "recorded an autograd node" : "\nrecorded an autograd node";
    if (e.is_gpu() && e.correlated_op >= 0 && static_cast<size_t>(e.correlated_op) < r.events.size())
      extra += (extra.empty() ? "" : "\n") + std::string("launched by: ") + r.events[e.correlated_op].name;
    if (!evs.empty()) evs += ',';
    evs += '[' + std::to_string(e.thread) + ',' + std::to_string(std::max(e.depth, 0)) + ',' +
           std::to_string(e.start_ns) + ',' + std::to_string(e.duration_ns()) + ',' + std::to_string(it->second) + ',' +
           std::to_string(static_cast<int>(e.kind) < static_cast<int>(std::size(kKinds)) ? static_cast<int>(e.kind) : 0);
    if (!extra.empty()) {
      auto [xit, xfresh] = extra_ids.emplace(extra, extras.size());
      if (xfresh) extras.push_back(extra);
      evs += ',' + std::to_string(xit->second);
    }
    evs += ']';
  }
  js += "],\"names\":[";
  for (size_t k = 0; k < names.size(); ++k) {
    if (k) js += ',';
    append_js_string(js, *names[k]);
  }
  js += "],\"extra\":[";
  for (size_t k = 0; k < extras.size(); ++k) {
    if (k) js += ',';
    append_js_string(js, extras[k]);
  }
  js += "],\"ev\":[" + evs + "]};\n";

  h += "<section id=\"timeline\"><h2>Timeline</h2>\n<div class=\"controls\">"
       "<button id=\"zin\">Zoom in</button><button id=\"zout\">Zoom out</button><button id=\"zreset\">Reset</button>"
       "<span>wheel: zoom at the pointer, drag: pan, double-click: reset</span> <span id=\"tl-range\"></span></div>\n";
  h += "<p class=\"legend\">";
  for (size_t k = 0; k < std::size(kKinds); ++k)
    h += std::string("<span><i style=\"background:") + kKindColours[k] + "\"></i>" + kind_name(kKinds[k]) + "</span>";
  h += "</p>\n";
  if (shown.size() < r.events.size())
    h += "<p>Showing the " + std::to_string(shown.size()) + " longest of " + std::to_string(r.events.size()) +
         " events.</p>\n";
  h += "<div id=\"tl-wrap\"><canvas id=\"tl\"></canvas><div id=\"tip\"></div></div>\n"
       "<noscript><p>The timeline needs JavaScript; the chart and table below do not.</p></noscript>\n</section>\n";
  h += "<script>\n" + js + "</script>\n";
}

void append_self_time_chart(std::string& h, const KeyAverages& ka) {
  std::vector<KeyAverage> rows = ka.rows();
  std::stable_sort(rows.begin(), rows.end(), [](const KeyAverage& a, const KeyAverage& b) {
    return a.self_cpu_time_total_ns > b.self_cpu_time_total_ns;
  });
  if (rows.size() > kMaxBars) rows.resize(kMaxBars);
  h += "<section id=\"ops\"><h2>Self time by op</h2>\n";
  if (rows.empty()) {
    h += "<p>No events.</p></section>\n";
    return;
  }
  const int label_w = 230, bar_w = 560, row_h = 20, value_w = 150;
  const int height = static_cast<int>(rows.size()) * row_h + 6;
  const double max_ns = std::max<double>(1.0, static_cast<double>(rows.front().self_cpu_time_total_ns));
  char buf[512];
  std::snprintf(buf, sizeof buf, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
                label_w + bar_w + value_w, height, label_w + bar_w + value_w, height);
  h += buf;
  for (size_t k = 0; k < rows.size(); ++k) {
    const KeyAverage& row = rows[k];
    const int y = static_cast<int>(k) * row_h + 3;
    const double w = std::max(1.0, bar_w * static_cast<double>(row.self_cpu_time_total_ns) / max_ns);
    std::string label = row.name;
    if (!row.input_shapes.empty()) label += " " + row.input_shapes;
    std::string shown = label.size() > 36 ? label.substr(0, 35) + "\xe2\x80\xa6" : label;
    h += "<g><title>" + escape_html(label) + ": " + advisor::format_duration(row.self_cpu_time_total_ns) + " self, " +
         std::to_string(row.count) + " calls</title>";
    std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", label_w - 6, y + 13);
    h += buf + escape_html(shown) + "</text>";
    std::snprintf(buf, sizeof buf, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#4e79a7\"/>", label_w, y,
                  w, row_h - 4);
    h += buf;
    std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%d\">", label_w + w + 5, y + 13);
    h += buf + advisor::format_duration(row.self_cpu_time_total_ns) + " (" + std::to_string(row.count) +
         ")</text></g>\n";
  }
  h += "</svg>\n</section>\n";
}

void append_memory_chart(std::string& h, const ProfileResult& r) {
  if (r.memory.empty()) return;
  std::vector<MemorySample> m = r.memory;
  std::stable_sort(m.begin(), m.end(), [](const MemorySample& a, const MemorySample& b) { return a.time_ns < b.time_ns; });
  int64_t t_end = std::max(r.duration_ns, m.back().time_ns);
  int64_t peak = 1;
  for (const MemorySample& s : m) peak = std::max({peak, s.allocated, s.reserved});
  const int W = 900, H = 180, L = 70, B = 20;
  // Per pixel column, the highest value (so that peaks survive).
  const size_t cols = std::min<size_t>(kMaxMemoryPoints, static_cast<size_t>(W - L));
  auto polyline = [&](auto value, const char* colour) {
    std::vector<int64_t> col_max(cols, -1);
    for (const MemorySample& s : m) {
      size_t c = t_end > 0 ? static_cast<size_t>(static_cast<double>(s.time_ns) / static_cast<double>(t_end) * (cols - 1)) : 0;
      c = std::min(c, cols - 1);
      col_max[c] = std::max(col_max[c], value(s));
    }
    std::string pts;
    char buf[64];
    for (size_t c = 0; c < cols; ++c) {
      if (col_max[c] < 0) continue;
      double x = L + static_cast<double>(c) * (W - L) / static_cast<double>(cols);
      double y = (H - B) - static_cast<double>(col_max[c]) / static_cast<double>(peak) * (H - B - 10);
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", x, y);
      pts += buf;
    }
    return "<polyline fill=\"none\" stroke=\"" + std::string(colour) + "\" stroke-width=\"1.5\" points=\"" + pts + "\"/>";
  };
  h += "<section id=\"memory\"><h2>Memory</h2>\n<p class=\"legend\"><span><i style=\"background:#4e79a7\"></i>"
       "allocated</span><span><i style=\"background:#f28e2b\"></i>reserved</span> peak " + format_bytes(peak) + "</p>\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">", W, H, W, H);
  h += buf;
  std::snprintf(buf, sizeof buf, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>", L, H - B, W, H - B);
  h += buf;
  std::snprintf(buf, sizeof buf, "<text x=\"2\" y=\"14\">%s</text><text x=\"2\" y=\"%d\">0</text>", format_bytes(peak).c_str(), H - B);
  h += buf;
  std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", W - 2, H - 4,
                advisor::format_duration(t_end).c_str());
  h += buf;
  h += polyline([](const MemorySample& s) { return s.reserved; }, "#f28e2b");
  h += polyline([](const MemorySample& s) { return s.allocated; }, "#4e79a7");
  h += "</svg>\n</section>\n";
}

void append_table(std::string& h, const KeyAverages& ka, bool grouped) {
  int64_t total_self = 0;  // both percentages are shares of it, as in PyTorch's table
  for (const KeyAverage& row : ka.rows()) total_self += row.self_cpu_time_total_ns;
  h += "<section id=\"table\"><h2>Operators</h2>\n<p>Click a column to sort.</p>\n<table class=\"ops\"><thead><tr>"
       "<th>Name</th><th>Self CPU %</th><th>Self CPU</th><th>CPU total %</th><th>CPU total</th><th>CPU time avg</th>"
       "<th>CPU Mem</th><th>Self CPU Mem</th><th># of Calls</th>";
  if (grouped) h += "<th>Input Shapes</th>";
  h += "</tr></thead><tbody>\n";
  std::vector<KeyAverage> rows = ka.rows();
  std::stable_sort(rows.begin(), rows.end(), [](const KeyAverage& a, const KeyAverage& b) {
    return a.self_cpu_time_total_ns > b.self_cpu_time_total_ns;
  });
  auto num = [](int64_t v, const std::string& text) {
    return "<td data-v=\"" + std::to_string(v) + "\">" + text + "</td>";
  };
  for (const KeyAverage& row : rows) {
    int64_t avg = row.count > 0 ? row.cpu_time_total_ns / row.count : 0;
    h += "<tr><td>" + escape_html(row.name) + "</td>" +
         num(row.self_cpu_time_total_ns, format_pct(row.self_cpu_time_total_ns, total_self)) +
         num(row.self_cpu_time_total_ns, advisor::format_duration(row.self_cpu_time_total_ns)) +
         num(row.cpu_time_total_ns, format_pct(row.cpu_time_total_ns, total_self)) +
         num(row.cpu_time_total_ns, advisor::format_duration(row.cpu_time_total_ns)) +
         num(avg, advisor::format_duration(avg)) + num(row.cpu_memory_bytes, format_bytes(row.cpu_memory_bytes)) +
         num(row.self_cpu_memory_bytes, format_bytes(row.self_cpu_memory_bytes)) +
         num(row.count, std::to_string(row.count));
    if (grouped) h += "<td>" + escape_html(row.input_shapes) + "</td>";
    h += "</tr>\n";
  }
  h += "</tbody></table>\n<details><summary>As text (key_averages().table())</summary><pre>" +
       escape_html(ka.table("self_cpu_time_total", 0)) + "</pre></details>\n</section>\n";
}

}  // namespace

void export_html_report(const ProfileResult& r, const std::string& path) {
  std::vector<Finding> findings = advise(r);
  // Grouped by input shape when shapes were recorded: the table then says
  // which shapes are slow.
  const bool grouped = r.options.record_shapes();
  KeyAverages ka = key_averages(r, grouped);

  std::string h;
  h.reserve(64 * 1024 + r.events.size() * 48);
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>brisk profile</title>\n<style>";
  h += kCss;
  h += "</style></head><body>\n<header><h1>brisk profile</h1><p>";
  h += advisor::format_duration(r.duration_ns) + ", " + std::to_string(r.events.size()) + " events on " +
       std::to_string(r.threads.size()) + (r.threads.size() == 1 ? " thread" : " threads");
  std::string opts;
  if (r.options.record_shapes()) opts += " record_shapes";
  if (r.options.profile_memory()) opts += " profile_memory";
  if (r.options.with_stack()) opts += " with_stack";
  if (!opts.empty()) h += "; options:" + opts;
  h += "; " + std::to_string(findings.size()) + (findings.size() == 1 ? " finding" : " findings");
  h += "</p></header>\n<nav><a href=\"#advice\">Advice</a><a href=\"#timeline\">Timeline</a>"
       "<a href=\"#ops\">Self time by op</a>";
  if (!r.memory.empty()) h += "<a href=\"#memory\">Memory</a>";
  h += "<a href=\"#table\">Operators</a></nav>\n";
  append_advice(h, findings);
  append_timeline(h, r);
  append_self_time_chart(h, ka);
  append_memory_chart(h, r);
  append_table(h, ka, grouped);
  h += "<script>";
  h += kTimelineJs;
  h += "</script>\n</body></html>\n";
  io::write_file_atomic(path, h, "export_html_report");
}

}  // namespace brisk::profiler
