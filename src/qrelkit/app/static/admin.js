// The admin page keeps itself current without losing the admin's place.
// Every data-refresh-ms it asks /admin/api/changes for a token; when the token moved, it fetches this
// page again and swaps each <section id> of <main> for its new version, keeping: the admin's place
// (the first section that begins inside the window stays at the same height, tables scrolled sideways
// stay scrolled), open <details>, the focused field, and
// anything typed or ticked in a form. Sections marked data-static (a notice, an invite link) are left as
// they are; a section holding the keyboard focus on a button or link, or typed text that its new version
// has no field for, is left for the next check.
// Without this script the page is complete; it only stops updating itself.
(function () {
  "use strict";
  var body = document.body;
  var every = parseInt(body.getAttribute("data-refresh-ms") || "0", 10);
  var token = body.getAttribute("data-token") || "";
  var status = document.getElementById("refresh-status");
  if (!every || !window.fetch || !window.DOMParser) { return; }

  function fields(root) {
    return Array.prototype.filter.call(root.querySelectorAll("input, textarea, select"), function (el) {
      return el.type !== "hidden" && !el.readOnly;
    });
  }
  function keyOf(el) {
    var form = el.form;
    var where = form ? (form.id || form.getAttribute("action") || "") : "";
    return where + "|" + (el.name || el.id || el.type);
  }
  function dirty(el) {
    if (el.type === "checkbox" || el.type === "radio") { return el.checked !== el.defaultChecked; }
    if (el.tagName === "SELECT") {
      return Array.prototype.some.call(el.options, function (o) { return o.selected !== o.defaultSelected; });
    }
    return el.value !== el.defaultValue;
  }
  function remember(section) {
    var kept = [];
    fields(section).forEach(function (el) {
      var focused = document.activeElement === el;
      if (!dirty(el) && !focused) { return; }
      var item = { key: keyOf(el), value: el.value, checked: el.checked, focused: focused };
      if (focused && typeof el.selectionStart === "number") {
        try { item.start = el.selectionStart; item.end = el.selectionEnd; } catch (e) { /* not text */ }
      }
      kept.push(item);
    });
    var open = Array.prototype.map.call(section.querySelectorAll("details"), function (d) {
      return d.id || "";
    });
    var openState = Array.prototype.map.call(section.querySelectorAll("details"), function (d) { return d.open; });
    var across = Array.prototype.map.call(section.querySelectorAll(".table-wrap, .kappa-block"), function (b) {
      return b.scrollLeft;
    });
    return { fields: kept, details: open, open: openState, across: across };
  }
  function restore(section, saved) {
    var byKey = {};
    fields(section).forEach(function (el) { byKey[keyOf(el)] = el; });
    saved.fields.forEach(function (item) {
      var el = byKey[item.key];
      if (!el) { return; }
      if (el.type === "checkbox" || el.type === "radio") { el.checked = item.checked; } else { el.value = item.value; }
      if (item.focused) {
        el.focus({ preventScroll: true });
        if (item.start !== undefined) { try { el.setSelectionRange(item.start, item.end); } catch (e) { /* */ } }
      }
    });
    var boxes = section.querySelectorAll(".table-wrap, .kappa-block");
    saved.across.forEach(function (left, i) { if (boxes[i] && left) { boxes[i].scrollLeft = left; } });
    var details = section.querySelectorAll("details");
    saved.details.forEach(function (id, i) {
      var d = id ? section.querySelector("details#" + CSS.escape(id)) : details[i];
      if (d) { d.open = saved.open[i]; }
    });
  }
  function placeable(section, saved) {
    var keys = {};
    fields(section).forEach(function (el) { keys[keyOf(el)] = true; });
    return saved.fields.every(function (item) { return keys[item.key]; });
  }
  // The place to keep: the first section that begins inside the window (else the one the window is in);
  // after the swap, the window is scrolled so that it begins at the same height again.
  function anchor() {
    var sections = document.querySelectorAll("main > section[id]");
    var within = null;
    for (var i = 0; i < sections.length; i++) {
      var box = sections[i].getBoundingClientRect();
      if (box.top >= 0 && box.top < window.innerHeight) { return { id: sections[i].id, top: box.top }; }
      if (!within && box.bottom > 0) { within = { id: sections[i].id, top: box.top }; }
    }
    return within;
  }
  function swap(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html");
    var main = document.querySelector("main");
    var freshMain = fresh.querySelector("main");
    if (!main || !freshMain) { return null; }
    var mark = anchor();
    var previous = null;
    var skipped = false;
    Array.prototype.forEach.call(freshMain.querySelectorAll(":scope > section[id]"), function (next) {
      var now = document.getElementById(next.id);
      if (!now) {  // a section that appeared (e.g. the material of a failed round)
        var node = document.importNode(next, true);
        if (previous && previous.parentNode === main) { previous.after(node); } else { main.appendChild(node); }
        previous = node;
        return;
      }
      previous = now;
      if (now.hasAttribute("data-static") || now.innerHTML === next.innerHTML) { return; }
      var active = document.activeElement;
      if (active && active !== document.body && now.contains(active) && !/^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)) {
        skipped = true;  // a focused button or link: swap this section once focus has moved on
        return;
      }
      var saved = remember(now);
      var node = document.importNode(next, true);
      if (!placeable(node, saved)) { skipped = true; return; }  // keep what was typed over newer numbers
      now.replaceWith(node);
      restore(node, saved);
      previous = node;
    });
    if (mark) {
      var again = document.getElementById(mark.id);
      if (again) { window.scrollBy(0, again.getBoundingClientRect().top - mark.top); }
    }
    // a section left out is tried again at the next check: the token is kept as it was
    return skipped ? token : (fresh.body.getAttribute("data-token") || "");
  }
  function say(text) { if (status) { status.textContent = text; } }
  function check() {
    fetch("/admin/api/changes", { credentials: "same-origin", headers: { accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) { throw new Error(r.status === 401 ? "signed out" : "status " + r.status); }
        return r.json();
      })
      .then(function (data) {
        if (data.token === token) { return null; }
        return fetch(window.location.pathname + window.location.search, { credentials: "same-origin" })
          .then(function (r) { if (!r.ok) { throw new Error("status " + r.status); } return r.text(); })
          .then(function (html) {
            var seen = swap(html);
            if (seen !== null) {
              token = seen === token ? token : (seen || data.token);
              say("Updated at " + new Date().toLocaleTimeString() + ".");
            }
          });
      })
      .then(function () { window.setTimeout(check, every); })
      .catch(function (err) {
        say("Not updating (" + err.message + "); reload the page.");
      });
  }
  window.setTimeout(check, every);
})();
