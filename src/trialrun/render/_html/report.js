/* trialrun HTML report: draws the case table and trajectories from the embedded JSON, lazily.
   Only one page of the table is in the DOM; a case's detail is built when it is expanded, a trial's timeline
   when that is expanded. Every text goes through textContent, never innerHTML. Layout of the data: see
   trialrun/render/html.py (_Packer). */
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("trialrun-data").textContent);
  var S = DATA.S || [];
  var T = DATA.T || [];
  var PREVIEW_CHARS = 600;
  var PREVIEW_LINES = 12;
  var uid = 0;

  // -- small helpers ---------------------------------------------------------------------------------------
  function str(i) { return i === undefined || i === null ? "" : S[i]; }

  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) {
      for (var key in attrs) {
        var value = attrs[key];
        if (value === undefined || value === null || value === false) continue;
        if (key === "class") el.className = value;
        else if (key === "text") el.textContent = value;
        else if (key.slice(0, 2) === "on") el.addEventListener(key.slice(2), value);
        else el.setAttribute(key, value === true ? "" : value);
      }
    }
    for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }

  function append(el, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(el, c); }); return; }
    el.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }

  var SVG_NS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    var el = document.createElementNS(SVG_NS, tag);
    for (var key in attrs || {}) el.setAttribute(key, attrs[key]);
    for (var i = 2; i < arguments.length; i++) if (arguments[i]) el.appendChild(arguments[i]);
    return el;
  }

  function nextId(prefix) { uid += 1; return prefix + "-" + uid; }
  function rate(v) { return v === undefined || v === null ? "n/a" : v.toFixed(2); }
  function money(v) {
    if (v === undefined || v === null) return "n/a";
    return v >= 1 ? "$" + v.toFixed(2) : "$" + v.toFixed(4);
  }
  function seconds(v) { return v === undefined ? "" : (v < 10 ? v.toFixed(2) : v.toFixed(1)) + " s"; }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
  function fmtInt(n) { return n.toLocaleString("en-US"); }
  function json(value) {
    try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
  }

  var STATUS = {
    passed: { icon: "✓", label: "PASS", cls: "pass" },
    failed: { icon: "✗", label: "FAIL", cls: "fail" },
    skipped: { icon: "–", label: "SKIP", cls: "skip" }
  };
  function partlyBadge(c) {  // a case an interruption stopped part-way: scored on the trials that finished
    return c.partly_run ? [" ", h("span", { "class": "badge partial", title: "Partly run: " + c.partly_run }, "◐ PARTLY RUN")] : null;
  }
  function statusBadge(status) {
    var s = STATUS[status] || STATUS.skipped;
    return h("span", { "class": "badge " + s.cls }, s.icon + " " + s.label);
  }
  function flagChip(label, flag) {
    if (flag === undefined) return null;
    return h("span", { "class": "chip " + (flag ? "pass" : "fail") }, (flag ? "✓ " : "✗ ") + label);
  }

  /* A long text shown as its first lines, with a button to show it whole (keyboard-operable). */
  function longText(text, cls) {
    var pre = h("pre", { "class": cls || "text" });
    var lines = text.split("\n");
    var long = text.length > PREVIEW_CHARS || lines.length > PREVIEW_LINES;
    if (!long) { pre.textContent = text; return pre; }
    var preview = lines.slice(0, PREVIEW_LINES).join("\n");
    if (preview.length > PREVIEW_CHARS) preview = preview.slice(0, PREVIEW_CHARS);
    pre.textContent = preview + " …";
    pre.classList.add("clipped");
    var id = nextId("text");
    pre.id = id;
    var label = "Show all (" + fmtInt(text.length) + " characters, " + plural(lines.length, "line") + ")";
    var button = h("button", { type: "button", "class": "link", "aria-expanded": "false", "aria-controls": id }, label);
    button.addEventListener("click", function () {
      var open = button.getAttribute("aria-expanded") === "true";
      pre.textContent = open ? preview + " …" : text;
      pre.classList.toggle("clipped", open);
      button.setAttribute("aria-expanded", open ? "false" : "true");
      button.textContent = open ? label : "Show less";
    });
    return h("div", { "class": "long" }, pre, button);
  }

  // -- the pass^k / pass@k curve ------------------------------------------------------------------------------
  function curve(c) {
    var n = c.n || 0;
    if (n < 2) return null;
    var at = c.curve ? c.curve.at : null, pow = c.curve ? c.curve.pow : null;
    if (!at) {  // every trial passed (both curves 1) or none did (both 0)
      var flat = c.c === n ? 1 : 0;
      at = []; pow = [];
      for (var i = 0; i < n; i++) { at.push(flat); pow.push(flat); }
    }
    var W = 360, H = 190, L = 40, R = 12, TOP = 12, B = 34;
    var x = function (k) { return L + (n === 1 ? 0 : (k - 1) * (W - L - R) / (n - 1)); };
    var y = function (v) { return TOP + (1 - v) * (H - TOP - B); };
    var title = "pass^k falls from " + rate(pow[0]) + " at k=1 to " + rate(pow[n - 1]) + " at k=" + n +
      "; pass@k rises from " + rate(at[0]) + " to " + rate(at[n - 1]);
    var titleId = nextId("curve");
    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "aria-labelledby": titleId,
      "class": "curve" });
    var t = svg("title", { id: titleId }); t.textContent = title; root.appendChild(t);
    [0, 0.5, 1].forEach(function (v) {
      root.appendChild(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), "class": "grid" }));
      var label = svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", "class": "axis" });
      label.textContent = v.toFixed(1); root.appendChild(label);
    });
    var step = Math.max(1, Math.ceil(n / 10));
    for (var k = 1; k <= n; k += step) {
      var tick = svg("text", { x: x(k), y: H - B + 16, "text-anchor": "middle", "class": "axis" });
      tick.textContent = String(k); root.appendChild(tick);
    }
    var xl = svg("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", "class": "axis" });
    xl.textContent = "k (trials drawn)"; root.appendChild(xl);
    function series(values, cls, name) {
      var d = values.map(function (v, i) { return (i ? "L" : "M") + x(i + 1).toFixed(1) + " " + y(v).toFixed(1); }).join(" ");
      root.appendChild(svg("path", { d: d, "class": "series " + cls }));
      values.forEach(function (v, i) {
        var dot = svg("circle", { cx: x(i + 1), cy: y(v), r: 3.5, "class": "dot " + cls });
        var tip = svg("title"); tip.textContent = name + " at k=" + (i + 1) + ": " + v.toFixed(3);
        dot.appendChild(tip); root.appendChild(dot);
      });
    }
    series(at, "at", "pass@k");
    series(pow, "pow", "pass^k");
    var legend = h("p", { "class": "legend" },
      h("span", { "class": "key pow" }, "pass^k: all k trials pass"), " ",
      h("span", { "class": "key at" }, "pass@k: at least one of k passes"));
    return h("figure", { "class": "curve-figure" }, root,
      h("figcaption", null, "Unbiased estimates from " + c.c + "/" + n + " passing trials, for k = 1…" + n + "."), legend);
  }

  // -- a trial's timeline --------------------------------------------------------------------------------------
  function args(a) {
    if (a === undefined) return null;
    var keys = Object.keys(a);
    var simple = keys.length > 0 && keys.length <= 6 && keys.every(function (k) {
      var v = a[k];
      return v === null || typeof v === "number" || typeof v === "boolean" ||
        (typeof v === "string" && v.length <= 200 && v.indexOf("\n") < 0);
    });
    if (!simple) return longText(json(a), "args");
    return h("dl", { "class": "args" }, keys.map(function (k) {
      return h("div", null, h("dt", null, k), h("dd", null, h("code", null, typeof a[k] === "string" ? a[k] : JSON.stringify(a[k]))));
    }));
  }

  function denialBlock(d) {
    return h("div", { "class": "denial", role: "note" },
      h("p", { "class": "denial-head" }, h("span", { "class": "badge deny" }, "⊘ DENIED"), d[4] ? " by the agent itself" : " by policy",
        d[3] !== undefined && d[3] !== null ? [" · rule ", h("code", null, str(d[3]))] : null),
      d[2] !== undefined ? h("p", { "class": "denial-reason" }, str(d[2])) : null);
  }

  function callBlock(call, tj) {
    var denial = call.dn !== undefined ? tj.den[call.dn] : null;
    var result = null;
    if (call.r !== undefined) {
      result = h("div", { "class": "result" + (call.e ? " error" : "") },
        h("p", { "class": "result-head" }, call.e ? h("span", { "class": "badge fail" }, "✗ tool error") : "↳ result"),
        longText(str(call.r), "text"));
    }
    return h("div", { "class": "call" + (denial ? " denied" : "") },
      h("p", { "class": "call-head" }, h("span", { "class": "call-icon", "aria-hidden": "true" }, "⚙"),
        h("span", { "class": "sr-only" }, "Tool call "), h("code", { "class": "tool-name" }, str(call.n))),
      args(call.a), denial ? denialBlock(denial) : null, result);
  }

  function usageText(u) {
    if (!u) return "";
    return fmtInt(u[0]) + " in / " + fmtInt(u[1]) + " out tokens" + (u[2] ? " (" + fmtInt(u[2]) + " cached)" : "");
  }

  function turnItem(turn, i, tj) {
    var meta = [turn.m !== undefined ? str(turn.m) : "", usageText(turn.u)].filter(Boolean).join(" · ");
    return h("li", { "class": "step turn" },
      h("p", { "class": "step-head" }, "Turn " + (i + 1), meta ? h("span", { "class": "muted" }, " · " + meta) : null),
      turn.x !== undefined ? longText(str(turn.x), "text model-text") : null,
      (turn.c || []).map(function (call) { return callBlock(call, tj); }),
      (turn.r || []).map(function (r) {
        return h("div", { "class": "result" + (r.e ? " error" : "") }, h("p", { "class": "result-head" },
          r.e ? "✗ tool error (no matching call)" : "↳ tool result (no matching call)"), longText(str(r.r), "text"));
      }));
  }

  function timeline(trial, kase) {
    var tj = trial.tj !== undefined ? T[trial.tj] : { turns: [] };
    var items = [];
    // The case's own prompt (a suite file's), else what the agent was observed being asked (a Python case).
    var prompt = kase.metadata && kase.metadata.prompt;
    if (prompt === undefined && tj.pr !== undefined) prompt = str(tj.pr);
    if (prompt !== undefined) {
      items.push(h("li", { "class": "step prompt" }, h("p", { "class": "step-head" }, "Prompt"),
        longText(typeof prompt === "string" ? prompt : json(prompt), "text")));
    }
    (tj.turns || []).forEach(function (turn, i) { items.push(turnItem(turn, i, tj)); });
    // Side requests (a title, a summary) and sub-agents: folded under the main conversation, never counted as turns.
    (tj.cv || []).forEach(function (cv) {
      items.push(h("li", { "class": "step conversation " + str(cv.ro) },
        h("details", null, h("summary", { "class": "step-head" }, str(cv.ti)),
          h("ol", { "class": "timeline nested" }, (cv.turns || []).map(function (turn, i) { return turnItem(turn, i, tj); })))));
    });
    var output = trial.os !== undefined ? str(trial.os) : (trial.oj !== undefined ? json(trial.oj) : null);
    items.push(h("li", { "class": "step output" }, h("p", { "class": "step-head" }, "Final output",
      trial.st !== undefined ? h("span", { "class": "muted" }, " · ended: " + str(trial.st)) : null),
      output === null ? h("p", { "class": "muted" }, "(no output)") : longText(output, "text")));
    return h("ol", { "class": "timeline", "aria-label": "Trajectory of trial " + trial.k }, items);
  }

  function errorBlock(e, label) {
    if (!e) return null;
    return h("div", { "class": "alert bad trial-error" },
      h("p", null, h("strong", null, label + " (" + str(e[2]) + "): "), h("code", null, str(e[0])), ": " + str(e[1])),
      e[3] !== undefined ? h("details", null, h("summary", null, "Traceback"), h("pre", { "class": "text" }, str(e[3]))) : null);
  }

  function verdictTable(verdicts) {
    if (!verdicts || !verdicts.length) return h("p", { "class": "muted" }, "No graders ran.");
    return h("table", { "class": "verdicts" },
      h("caption", { "class": "sr-only" }, "Verdicts"),
      h("thead", null, h("tr", null, ["Result", "Kind", "Grader", "Reason", "Score"].map(function (c) {
        return h("th", { scope: "col" }, c);
      }))),
      h("tbody", null, verdicts.map(function (v) {
        var ok = v[0] === 1;
        return h("tr", { "class": ok ? "ok" : "bad" },
          h("td", null, h("span", { "class": "badge " + (ok ? "pass" : "fail") }, ok ? "✓ pass" : "✗ fail")),
          h("td", null, str(v[3])), h("td", null, h("code", null, str(v[1]))), h("td", { "class": "reason" }, str(v[2])),
          h("td", { "class": "num" }, v[4] === undefined || v[4] === null ? "" : rate(v[4])));
      })));
  }

  function trialBody(trial, kase) {
    var tj = trial.tj !== undefined ? T[trial.tj] : {};
    var allTurns = (tj.turns || []).concat.apply(tj.turns || [], (tj.cv || []).map(function (cv) { return cv.turns || []; }));
    var unlinked = (tj.den || []).filter(function (d, i) {
      return !allTurns.some(function (t) { return (t.c || []).some(function (c) { return c.dn === i; }); });
    });
    // Served by `trialrun view`: a link to the trial's page, where each turn shows its raw request and response.
    var raw = DATA.tl ? h("p", { "class": "raw-link" }, h("a", { "class": "trial-link", href: DATA.tl
      .replace("{test}", encodeURIComponent(kase.name)).replace("{trial}", String(trial.k)) },
      "Raw requests and responses of each turn →")) : null;
    return h("div", { "class": "trial-body" },
      errorBlock(trial.e, "Error"), errorBlock(trial.te, "Teardown error"),
      trial.kl ? [h("h5", null, "Processes killed when the agent ended"), h("ul", { "class": "commands" },
        trial.kl.map(function (k) { return h("li", null, h("code", null, str(k))); }))] : null,
      h("h5", null, "Verdicts"), verdictTable(trial.v),
      h("h5", null, "Trajectory"), raw, timeline(trial, kase),
      unlinked.length ? [h("h5", null, "Policy denials"), unlinked.map(denialBlock)] : null,
      tj.cmd ? [h("h5", null, "Commands run"), h("ul", { "class": "commands" }, tj.cmd.map(function (c) {
        return h("li", null, h("code", null, "$ " + str(c)));
      }))] : null,
      tj.notes ? [h("h5", null, "Observer notes"), h("ul", null, tj.notes.map(function (n) { return h("li", null, str(n)); }))] : null,
      filesLeft(trial.fl));
  }

  function diffPre(text) {  // a unified diff, each line marked for colour (as the viewer's trial page shows it)
    return h("pre", { "class": "diff" }, text.split("\n").filter(function (line, i, all) {
      return i < all.length - 1 || line !== "";
    }).map(function (line) {
      var cls = /^(\+\+\+|---)/.test(line) ? "meta" : line.charAt(0) === "@" ? "hunk" : line.charAt(0) === "+" ? "add"
        : line.charAt(0) === "-" ? "del" : "ctx";
      return h("span", { "class": cls }, line);
    }));
  }

  function filesLeft(fl) {  // the files the trial left in its workdir (its workspace diff)
    if (!fl) return null;
    return h("div", { "class": "files-left" }, h("h5", null, "Files left"), h("p", { "class": "files-summary" }, str(fl.s)),
      (fl.f || []).map(function (f) {
        return h("details", { "class": "file-left", "data-path": str(f[0]), "data-change": f[1], open: (fl.f || []).length <= 8 },
          h("summary", null, h("span", { "class": "badge change-" + f[1] }, f[1]), " ", h("code", null, str(f[0]))),
          f[2] !== undefined && f[2] !== null ? diffPre(str(f[2])) : null,
          f[3] !== undefined && f[3] !== null ? h("p", { "class": "muted file-note" }, str(f[3])) : null);
      }),
      fl.ne ? h("p", { "class": "muted" }, "Not examined: " + fl.ne.map(function (n) { return str(n[0]) + " (" + str(n[1]) + ")"; }).join("; ")) : null);
  }

  function trialSummary(trial) {
    var tj = trial.tj !== undefined ? T[trial.tj] : {};
    var turns = (tj.turns || []).length;
    var calls = (tj.turns || []).reduce(function (n, t) { return n + (t.c || []).length; }, 0);
    var denials = (tj.den || []).length;
    var failed = (trial.v || []).filter(function (v) { return v[0] !== 1; }).length;
    var facts = [plural(turns, "turn"), plural(calls, "tool call")];
    if (tj.cv) facts.push(plural(tj.cv.length, "side/sub conversation"));
    if (trial.d !== undefined) facts.push(seconds(trial.d));
    if (trial.$ !== undefined) facts.push(money(trial.$));
    if (trial.st !== undefined) facts.push("ended: " + str(trial.st));
    return h("summary", null,
      h("span", { "class": "trial-no" }, "Trial " + trial.k), " ",
      h("span", { "class": "badge " + (trial.p ? "pass" : "fail") }, trial.p ? "✓ PASS" : "✗ FAIL"), " ",
      flagChip("outcome", trial.o), flagChip("trajectory", trial.t), flagChip("cost", trial.c),
      denials ? h("span", { "class": "badge deny" }, "⊘ " + plural(denials, "denial")) : null,
      trial.e ? h("span", { "class": "badge fail" }, "⚠ error") : null,
      trial.te ? h("span", { "class": "badge fail" }, "⚠ teardown error") : null,
      h("span", { "class": "facts" }, facts.join(" · ")),
      failed ? h("span", { "class": "fail-count" }, plural(failed, "failed verdict")) : null);
  }

  function trialDetails(trial, kase, open) {
    var details = h("details", { "class": "trial " + (trial.p ? "passed" : "failed"), "data-trial": trial.k },
      trialSummary(trial));
    var built = false;
    function build() { if (!built && details.open) { built = true; details.appendChild(trialBody(trial, kase)); } }
    details.addEventListener("toggle", build);
    if (open) { details.open = true; build(); }
    return details;
  }

  // -- a case's detail -----------------------------------------------------------------------------------------
  function dl(pairs) {
    return h("dl", { "class": "facts-list" }, pairs.filter(function (p) { return p && p[1] !== null && p[1] !== ""; })
      .map(function (p) { return h("div", null, h("dt", null, p[0]), h("dd", null, p[1])); }));
  }

  function caseDetail(c) {
    var meta = c.metadata || {};
    var otherMeta = Object.keys(meta).filter(function (k) { return k !== "prompt" && meta[k] !== null; });
    var facts = dl([
      ["Trials", c.n ? c.c + " of " + c.n + " passed" : "none"],
      ["pass@1", c.pass_at_1 === undefined ? null : rate(c.pass_at_1) + (c.ci ? "  (95% CI " + rate(c.ci[0]) + "–" + rate(c.ci[1]) + ")" : "")],
      ["pass^" + c.n, c.pass_pow_k === undefined ? null : rate(c.pass_pow_k)],
      ["Score", c.score === undefined ? null : rate(c.score)],
      ["Failed by", c.why || null],
      ["Sub-scores", c.sub_text ? c.sub_text.map(function (p) { return p[0] + " " + p[1]; }).join(", ") : null],
      ["Tools used", c.tools_used ? c.tools_used.join(", ") : null],
      ["Mean turns", c.turns === undefined ? null : String(c.turns)],
      ["Cost", c.cost_usd === undefined ? null : money(c.cost_usd)],
      ["Mode", c.mode || null],
      ["Tags", c.tags ? c.tags.join(", ") : null]
    ].concat(otherMeta.map(function (k) {
      var v = meta[k];
      if (k === "line" && typeof v === "number") {  // where the suite file defines the test, not a bare "line 7"
        var run = (DATA.runs || [])[0] || {}, suite = (run.config || {})["suite.path"];
        return ["Defined at", (typeof suite === "string" ? suite : "the suite file") + ":" + v + " (its line in the suite file)"];
      }
      return [k, typeof v === "string" ? v : JSON.stringify(v)];
    })));
    var parts = [];
    if (c.title) parts.push(h("p", { "class": "case-title" }, c.title));
    if (c.description) parts.push(h("p", { "class": "description" }, c.description));
    if (c.status === "skipped") parts.push(h("p", { "class": "alert warn" }, "Skipped: " + (c.skip_reason || "skipped")));
    if (c.partly_run) parts.push(h("p", { "class": "alert warn partly-run" }, "Partly run: " + c.partly_run + "."));
    if (meta.prompt !== undefined && !(c.trials || []).length) {  // with trials, each timeline starts with it
      parts.push(h("div", { "class": "prompt-box" }, h("p", { "class": "step-head" }, "Prompt"),
        longText(typeof meta.prompt === "string" ? meta.prompt : json(meta.prompt), "text")));
    }
    parts.push(h("div", { "class": "case-grid" }, facts, curve(c)));
    var links = DATA.kind === "run" ? servedLinks(c.name, false) : null;
    if (links && c.fp && DATA.fl) {  // a flaky case: its failing trial beside its passing one, one click away
      links.insertBefore(h("a", { "class": "flaky-diff-link", href: DATA.fl.replace("{test}", encodeURIComponent(c.name))
        .replace("{ta}", String(c.fp[0])).replace("{tb}", String(c.fp[1])) },
        "Failing trial " + c.fp[1] + " beside passing trial " + c.fp[0] + " →"), links.firstChild);
    }
    if (links && (c.trials || []).length && DATA.tl) {
      links.appendChild(h("span", null, "Trial pages: ", (c.trials || []).map(function (t, i) {
        return [i ? " · " : "", h("a", { "class": "trial-page-link", href: DATA.tl.replace("{test}", encodeURIComponent(c.name))
          .replace("{trial}", String(t.k)) }, String(t.k) + (t.p ? " ✓" : " ✗"))];
      })));
    }
    if (links) parts.push(links);
    var trials = c.trials || [];
    if (trials.length) {
      var firstFailed = trials.findIndex(function (t) { return !t.p; });
      parts.push(h("h4", null, "Trials"));
      parts.push(h("div", { "class": "trials" }, trials.map(function (t, i) { return trialDetails(t, c, i === firstFailed); })));
    }
    return h("div", { "class": "case-detail" }, parts);
  }

  // -- a sortable, filterable, paged table ---------------------------------------------------------------------
  function Table(opts) {
    var self = this;
    this.opts = opts;
    this.sortKey = opts.sortKey;
    this.sortDir = opts.sortDir || 1;
    this.page = 0;
    this.pageSize = 50;
    this.filter = function () { return true; };
    this.expanded = {};
    this.details = {};
    this.view = opts.rows.slice();
    this.position = new Map(opts.rows.map(function (r, i) { return [r, i]; }));
    var headRow = h("tr", null, opts.columns.map(function (col) {
      var th = h("th", { scope: "col", "class": col.num ? "num" : null, "data-col": col.key });
      if (col.sort) {
        var button = h("button", { type: "button", "class": "sort" }, col.label, h("span", { "class": "arrow", "aria-hidden": "true" }));
        button.addEventListener("click", function () { self.sortBy(col.key); });
        th.appendChild(button);
      } else th.textContent = col.label;
      col.th = th;
      return th;
    }));
    this.tbody = h("tbody");
    this.table = h("table", { "class": "cases", id: opts.id },
      h("caption", { "class": "sr-only" }, opts.caption), h("thead", null, headRow), this.tbody);
    this.status = h("p", { "class": "count", "aria-live": "polite", id: opts.id + "-count" });
    this.prev = h("button", { type: "button", "class": "pager-btn", onclick: function () { self.go(self.page - 1); } }, "‹ Previous");
    this.next = h("button", { type: "button", "class": "pager-btn", onclick: function () { self.go(self.page + 1); } }, "Next ›");
    this.pageLabel = h("span", { "class": "page-label" });
    var sizes = h("select", { "aria-label": "Rows per page", onchange: function () { self.pageSize = +this.value; self.go(0); } },
      [25, 50, 100, 250].map(function (n) { return h("option", { value: n, selected: n === 50 }, n + " per page"); }));
    this.pager = h("nav", { "class": "pager", "aria-label": opts.caption + " pages" }, this.prev, this.pageLabel, this.next, sizes);
    this.root = h("div", { "class": "table-wrap" }, this.status, h("div", { "class": "scroll" }, this.table), this.pager);
    this.refresh();
  }

  Table.prototype.sortBy = function (key) {
    if (this.sortKey === key) this.sortDir = -this.sortDir;
    else { this.sortKey = key; this.sortDir = 1; }
    this.refresh();
  };

  Table.prototype.setFilter = function (fn) { this.filter = fn; this.page = 0; this.refresh(); };

  Table.prototype.refresh = function () {
    var col = this.opts.columns.find(function (c) { return c.key === this.sortKey; }, this);
    var dir = this.sortDir;
    var rows = this.opts.rows.filter(this.filter);
    if (col && col.sort) {
      var keyed = rows.map(function (r, i) { return { r: r, v: col.sort(r), i: i }; });
      keyed.sort(function (a, b) {
        var av = a.v, bv = b.v;
        var an = av === null || av === undefined, bn = bv === null || bv === undefined;
        if (an || bn) return an && bn ? a.i - b.i : (an ? 1 : -1);  // missing values last, either way
        if (av < bv) return -dir;
        if (av > bv) return dir;
        return a.i - b.i;
      });
      rows = keyed.map(function (k) { return k.r; });
    }
    this.view = rows;
    this.opts.columns.forEach(function (c) {
      if (!c.sort) return;
      var state = c.key === this.sortKey ? (dir > 0 ? "ascending" : "descending") : "none";
      c.th.setAttribute("aria-sort", state);
      c.th.querySelector(".arrow").textContent = state === "ascending" ? " ▲" : state === "descending" ? " ▼" : " ↕";
    }, this);
    this.render();
  };

  Table.prototype.go = function (page) {
    var pages = Math.max(1, Math.ceil(this.view.length / this.pageSize));
    this.page = Math.min(Math.max(0, page), pages - 1);
    this.render();
  };

  Table.prototype.render = function () {
    var self = this, opts = this.opts;
    var total = this.view.length;
    var pages = Math.max(1, Math.ceil(total / this.pageSize));
    if (this.page >= pages) this.page = pages - 1;
    var start = this.page * this.pageSize;
    var rows = this.view.slice(start, start + this.pageSize);
    var body = h("tbody");
    rows.forEach(function (row) {
      var key = opts.key(row);
      var open = !!self.expanded[key];
      var detailId = "detail-" + opts.id + "-" + self.position.get(row);
      var toggle = h("button", { type: "button", "class": "expander", "aria-expanded": open ? "true" : "false",
        "aria-controls": detailId, "data-case": key });
      toggle.appendChild(h("span", { "class": "chev", "aria-hidden": "true" }, "▸"));
      append(toggle, opts.label(row));
      toggle.addEventListener("click", function () { self.toggle(row); });
      var tr = h("tr", { "class": "row " + (opts.rowClass ? opts.rowClass(row) : ""), "data-case": key },
        opts.columns.map(function (c) {
          return h(c.key === opts.expandColumn ? "th" : "td", { "class": c.num ? "num" : null, scope: c.key === opts.expandColumn ? "row" : null },
            c.key === opts.expandColumn ? toggle : c.cell(row));
        }));
      body.appendChild(tr);
      if (open) {
        if (!self.details[key]) self.details[key] = opts.detail(row);
        body.appendChild(h("tr", { "class": "detail-row", id: detailId },
          h("td", { colspan: opts.columns.length }, self.details[key])));
      }
    });
    if (!rows.length) {
      body.appendChild(h("tr", null, h("td", { colspan: opts.columns.length, "class": "empty" }, "No case matches the filters.")));
    }
    this.table.replaceChild(body, this.tbody);
    this.tbody = body;
    var all = opts.rows.length;
    this.status.textContent = total ? "Showing " + fmtInt(start + 1) + "–" + fmtInt(start + rows.length) + " of " +
      fmtInt(total) + " " + (total === 1 ? opts.noun : opts.nouns) + (total < all ? " (filtered from " + fmtInt(all) + ")" : "")
      : "No " + opts.nouns + " match the filters (" + fmtInt(all) + " in all).";
    this.pageLabel.textContent = "Page " + (this.page + 1) + " of " + pages;
    this.prev.disabled = this.page === 0;
    this.next.disabled = this.page >= pages - 1;
    this.pager.hidden = total <= 25;  // fits the smallest page: nothing to page through or resize
  };

  Table.prototype.toggle = function (row) {
    var key = this.opts.key(row);
    if (this.expanded[key]) delete this.expanded[key];
    else this.expanded[key] = true;
    this.render();
    var button = this.tbody.querySelector('button.expander[data-case="' + cssEscape(key) + '"]');
    if (button) button.focus();
  };

  Table.prototype.reveal = function (key) {
    var index = this.view.findIndex(function (r) { return this.opts.key(r) === key; }, this);
    if (index < 0) return false;
    this.expanded[key] = true;
    this.go(Math.floor(index / this.pageSize));
    return true;
  };

  function cssEscape(s) { return window.CSS && CSS.escape ? CSS.escape(s) : s.replace(/["\\]/g, "\\$&"); }

  // -- the toolbar: search, status, tag ------------------------------------------------------------------------
  function toolbar(rows, statuses, statusOf, tagsOf, textOf, onChange) {
    var state = { q: "", status: "all", tag: "" };
    var counts = {}, tagCounts = {};
    rows.forEach(function (r) {
      var s = statusOf(r); counts[s] = (counts[s] || 0) + 1;
      (tagsOf(r) || []).forEach(function (t) { tagCounts[t] = (tagCounts[t] || 0) + 1; });
    });
    var search = h("input", { type: "search", id: "filter-text", placeholder: "Search cases…", "aria-label": "Search cases by name, tag or description" });
    search.addEventListener("input", function () { state.q = search.value.trim().toLowerCase(); apply(); });
    var group = nextId("status");
    var radios = h("fieldset", { "class": "segmented", id: "filter-status" }, h("legend", { "class": "sr-only" }, "Status"),
      statuses.map(function (s) {
        var n = s.value === "all" ? rows.length : rows.filter(function (r) { return s.match(r); }).length;
        var input = h("input", { type: "radio", name: group, value: s.value, id: group + "-" + s.value, checked: s.value === "all" });
        input.addEventListener("change", function () { state.status = s.value; apply(); });
        return h("label", { "for": group + "-" + s.value, "class": "seg " + (s.cls || "") }, input,
          h("span", null, s.label + " ", h("span", { "class": "n" }, String(n))));
      }));
    var tags = Object.keys(tagCounts).sort();
    var tagSelect = h("select", { id: "filter-tag", "aria-label": "Filter by tag" },
      h("option", { value: "" }, "All tags"),
      tags.map(function (t) { return h("option", { value: t }, t + " (" + tagCounts[t] + ")"); }));
    tagSelect.addEventListener("change", function () { state.tag = tagSelect.value; apply(); });
    function apply() {
      var match = statuses.find(function (s) { return s.value === state.status; }).match;
      onChange(function (r) {
        if (!match(r)) return false;
        if (state.tag && (tagsOf(r) || []).indexOf(state.tag) < 0) return false;
        return !state.q || textOf(r).toLowerCase().indexOf(state.q) >= 0;
      });
    }
    return h("div", { "class": "toolbar", role: "search" }, search, radios,
      tags.length ? h("label", { "class": "tag-filter" }, h("span", null, "Tag"), tagSelect) : null);
  }

  // -- the run page --------------------------------------------------------------------------------------------
  var STATUS_RANK = { failed: 0, passed: 1, skipped: 2 };

  function bar(value) {
    if (value === undefined || value === null) return h("span", { "class": "muted" }, "n/a");
    var fill = h("span", { "class": "fill" });
    fill.style.width = Math.round(value * 100) + "%";
    return h("span", { "class": "rate" }, h("span", { "class": "bar", "aria-hidden": "true" }, fill), rate(value));
  }

  function caseLabel(c) {
    return [h("span", { "class": "case-name" }, c.name), c.title && c.title !== c.name ? h("span", { "class": "case-sub" }, c.title) : null];
  }

  function tagList(tags) {
    return (tags || []).map(function (t) { return h("span", { "class": "tag" }, t); });
  }

  // Served by `trialrun view`: the way on from a case to its history across runs (and, comparing, to its diff).
  function servedLinks(name, diff) {
    if (!DATA.hl) return null;
    var test = encodeURIComponent(name);
    return h("p", { "class": "page-links" },
      diff && DATA.dl ? h("a", { "class": "diff-link", href: DATA.dl.replace("{test}", test) }, "Trajectory diff →") : null,
      h("a", { "class": "history-link", href: DATA.hl.replace("{test}", test) }, "History of this test →"));
  }

  function caseText(c) { return [c.name, c.title || "", c.description || "", (c.tags || []).join(" ")].join(" "); }

  function runPage(run, mount) {
    var table = new Table({
      id: "case-table", caption: "Cases", noun: "case", nouns: "cases",
      rows: run.cases || [],
      key: function (c) { return c.name; },
      label: caseLabel,
      expandColumn: "name",
      rowClass: function (c) { return "status-" + c.status; },
      detail: caseDetail,
      sortKey: "status",
      columns: [
        { key: "status", label: "Status", sort: function (c) { return STATUS_RANK[c.status]; }, cell: function (c) {
          return [statusBadge(c.status), c.why ? h("span", { "class": "failed-by" }, c.why) : null, partlyBadge(c)]; } },
        { key: "name", label: "Case", sort: function (c) { return c.name.toLowerCase(); } },
        { key: "tags", label: "Tags", cell: function (c) { return tagList(c.tags); } },
        { key: "trials", label: "Trials passed", num: true, sort: function (c) { return c.n ? c.c / c.n : null; },
          cell: function (c) { return c.n ? c.c + "/" + c.n : "–"; } },
        { key: "pass_at_1", label: "pass@1", num: true, sort: function (c) { return c.pass_at_1; }, cell: function (c) { return bar(c.pass_at_1); } },
        run.pow_k ? { key: "pass_pow_k", label: "pass^" + run.pow_k, num: true, sort: function (c) { return c.pass_pow_k; },
          cell: function (c) { return c.pass_pow_k === undefined ? h("span", { "class": "muted", title: "one trial: pass^k is pass@1" }, "–") : rate(c.pass_pow_k); } } : null,
        { key: "score", label: "Score", num: true, sort: function (c) { return c.score; },
          cell: function (c) { return c.score === undefined ? h("span", { "class": "muted" }, "–") : rate(c.score); } },
        { key: "cost", label: "Cost", num: true, sort: function (c) { return c.cost_usd; },
          cell: function (c) { return c.cost_usd === undefined ? h("span", { "class": "muted" }, "–") : money(c.cost_usd); } }
      ].filter(Boolean)
    });
    var statuses = [
      { value: "all", label: "All", match: function () { return true; } },
      { value: "failed", label: "Failed", cls: "fail", match: function (c) { return c.status === "failed"; } },
      { value: "passed", label: "Passed", cls: "pass", match: function (c) { return c.status === "passed"; } },
      { value: "skipped", label: "Skipped", cls: "skip", match: function (c) { return c.status === "skipped"; } }
    ];
    mount.appendChild(toolbar(run.cases || [], statuses, function (c) { return c.status; }, function (c) { return c.tags; },
      caseText, function (fn) { table.setFilter(fn); }));
    mount.appendChild(table.root);
    return table;
  }

  // -- the compare page ----------------------------------------------------------------------------------------
  var MOVE = {
    regressed: { icon: "▼", label: "lower", cls: "fail" },
    improved: { icon: "▲", label: "better", cls: "pass" },
    unchanged: { icon: "=", label: "same", cls: "same" },
    added: { icon: "+", label: "added", cls: "info" },
    removed: { icon: "−", label: "removed", cls: "skip" },
    not_finished: { icon: "⏸", label: "not finished", cls: "skip" }
  };
  var MOVE_RANK = { regressed: 1, not_finished: 2, removed: 3, added: 4, improved: 5, unchanged: 6 };

  var WORD = { "worse": "fail", "not worse": "pass", "cannot tell": "partial" };
  var WORD_RANK = { "worse": 0, "cannot tell": 1, "not worse": 2 };
  function signed(x) { return (x > 0 ? "+" : x < 0 ? "" : "+") + x.toFixed(2); }
  function span(c) { return signed(c[0]) + " [" + signed(c[1]) + ", " + signed(c[2]) + "]"; }
  function wordBadge(d) {
    if (!d.word) return "–";
    return h("span", { "class": "badge " + WORD[d.word], title: d.reason || "" }, d.word);
  }
  function passText(v) { return v === undefined ? "–" : v ? "PASS" : "FAIL"; }
  function arrow(a, b, fmt) {
    return (a === undefined ? "–" : fmt(a)) + " → " + (b === undefined ? "–" : fmt(b));
  }

  function comparePage(cmp, before, after, mount) {
    var beforeCases = {}, afterCases = {};
    (before.cases || []).forEach(function (c) { beforeCases[c.name] = c; });
    (after.cases || []).forEach(function (c) { afterCases[c.name] = c; });
    var tagsOf = function (d) { var c = afterCases[d.name] || beforeCases[d.name]; return c ? c.tags : []; };
    function moveBadge(d) {
      var m = MOVE[d.status];
      var badge = h("span", { "class": "badge " + m.cls }, m.icon + " " + m.label);
      return d.regression ? [h("span", { "class": "badge fail strong" }, "▼ REGRESSION"), " ", badge] : badge;
    }
    var table = new Table({
      id: "delta-table", caption: "Per-case changes", noun: "case", nouns: "cases",
      rows: cmp.cases || [],
      key: function (d) { return d.name; },
      label: function (d) { return h("span", { "class": "case-name" }, d.name); },
      expandColumn: "name",
      rowClass: function (d) { return "move-" + d.status + (d.regression ? " regression" : ""); },
      detail: function (d) {
        var b = beforeCases[d.name], a = afterCases[d.name];
        return h("div", null, servedLinks(d.name, !!(a && b)), h("div", { "class": "side-by-side" },
          h("section", null, h("h4", { "class": "side" }, "Before"), b ? caseDetail(b) : h("p", { "class": "muted" }, d.unfinished_in === "before" ? "Did not finish in the earlier run (interrupted)." : "Not in the earlier run.")),
          h("section", null, h("h4", { "class": "side" }, "After"), a ? caseDetail(a) : h("p", { "class": "muted" }, d.unfinished_in === "after" ? "Did not finish in the later run (interrupted)." : "Not in the later run."))));
      },
      sortKey: "change",
      columns: [
        { key: "change", label: "Change", sort: function (d) { return (d.regression ? 0 : MOVE_RANK[d.status]) * 10 + (d.delta || 0); }, cell: moveBadge },
        { key: "name", label: "Case", sort: function (d) { return d.name.toLowerCase(); } },
        { key: "before", label: "Before", num: true, sort: function (d) { return d.before; }, cell: function (d) { return d.before === undefined ? "–" : rate(d.before); } },
        { key: "after", label: "After", num: true, sort: function (d) { return d.after; }, cell: function (d) { return d.after === undefined ? "–" : rate(d.after); } },
        { key: "delta", label: "Δ", num: true, sort: function (d) { return d.delta; }, cell: function (d) {
          if (d.delta === undefined) return "–";
          var cls = d.delta > 1e-9 ? "up" : d.delta < -1e-9 ? "down" : "same";
          return h("span", { "class": "delta " + cls }, (d.delta > 0 ? "+" : "") + d.delta.toFixed(2));
        } },
        { key: "pass_at_1", label: "pass@1", num: true, sort: function (d) { return d.pass_at_1_after; },
          cell: function (d) { return arrow(d.pass_at_1_before, d.pass_at_1_after, rate); } },
        { key: "pass_pow_k", label: "pass^k", num: true, sort: function (d) { return d.pass_pow_k_after; },
          cell: function (d) { return arrow(d.pass_pow_k_before, d.pass_pow_k_after, rate); } },
        { key: "result", label: "Result", sort: function (d) { return (d.passed_before ? 2 : 0) + (d.passed_after ? 1 : 0); },
          cell: function (d) { return arrow(d.passed_before, d.passed_after, passText); } },
        { key: "word", label: "Verdict", sort: function (d) { return d.word ? WORD_RANK[d.word] : 9; }, cell: wordBadge },
        { key: "change95", label: "pass@1 change (95%)", num: true,
          sort: function (d) { return d.chance ? d.chance.change[1] : 9; },
          cell: function (d) { return d.chance ? span(d.chance.change) : "–"; } }
      ]
    });
    var statuses = [
      { value: "all", label: "All", match: function () { return true; } },
      { value: "regression", label: "Regressions", cls: "fail", match: function (d) { return !!d.regression; } },
      { value: "word-worse", label: "Verdict: worse", cls: "fail", match: function (d) { return d.word === "worse"; } },
      { value: "word-cannot-tell", label: "Cannot tell", match: function (d) { return d.word === "cannot tell"; } },
      { value: "regressed", label: "Lower", cls: "fail", match: function (d) { return d.status === "regressed"; } },
      { value: "improved", label: "Better", cls: "pass", match: function (d) { return d.status === "improved"; } },
      { value: "unchanged", label: "Same", match: function (d) { return d.status === "unchanged"; } },
      { value: "added", label: "Added", match: function (d) { return d.status === "added"; } },
      { value: "removed", label: "Removed", match: function (d) { return d.status === "removed"; } },
      { value: "not_finished", label: "Not finished", match: function (d) { return d.status === "not_finished"; } }
    ];
    mount.appendChild(toolbar(cmp.cases || [], statuses, function (d) { return d.status; }, tagsOf,
      function (d) { var c = afterCases[d.name] || beforeCases[d.name] || {}; return caseText(Object.assign({ name: d.name }, c)); },
      function (fn) { table.setFilter(fn); }));
    mount.appendChild(table.root);
    return table;
  }

  // -- start ---------------------------------------------------------------------------------------------------
  var mount = document.getElementById("app");
  var table = DATA.kind === "compare"
    ? comparePage(DATA.comparison, DATA.runs[0], DATA.runs[1], mount)
    : runPage(DATA.runs[0], mount);
  function caseFromHash() {
    // A hand-edited or truncated link ("#case=%E0%A4%A") is not an error worth stopping the page for: ignore it.
    var match = /^#case=(.+)$/.exec(location.hash);
    if (!match) return null;
    try { return decodeURIComponent(match[1]); } catch (e) { return null; }
  }
  function openFromHash() {
    var name = caseFromHash();
    if (name !== null && table.reveal(name)) {
      var el = document.querySelector('tr.row[data-case="' + cssEscape(name) + '"]');
      if (el) el.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", openFromHash);
  openFromHash();
  document.documentElement.setAttribute("data-ready", "1");
})();
