// Keyboard grading: digit keys grade, U marks unsure, Backspace goes back one pair.
// "Saved" is announced again after load, so that screen readers hear the live region change.
// The rubric's examples and "How to grade" open on the first pairs of each browser session.
// The page works without this script: every action is a plain form button or link.
(function () {
  "use strict";
  var status = document.getElementById("status");
  if (status && status.textContent.trim()) {
    var message = status.textContent;
    status.textContent = "";
    window.setTimeout(function () { status.textContent = message; }, 150);
  }
  openIntroOnFirstPairs();
  var started = Date.now();
  var form = document.getElementById("grade-form");
  var elapsed = document.getElementById("elapsed");
  var sent = false;
  if (form) {
    form.addEventListener("submit", function (event) {
      if (sent) { event.preventDefault(); return; }
      sent = true;
      if (elapsed) { elapsed.value = String(Date.now() - started); }
    });
  }
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var tag = target && target.tagName ? target.tagName.toLowerCase() : "";
    if (tag === "textarea" || tag === "input" || tag === "select" || (target && target.isContentEditable)) {
      if (event.key === "Escape") { target.blur(); }  // leave the note; keys grade again
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (event.key === "Backspace") {
      var back = document.getElementById("back");
      if (back) { event.preventDefault(); window.location.href = back.getAttribute("href"); }
      return;
    }
    if (!form) { return; }
    var key = event.key.length === 1 ? event.key.toLowerCase() : "";
    if (!key) { return; }
    var button = form.querySelector('button[data-key="' + key + '"]');
    if (button) {
      event.preventDefault();
      form.requestSubmit(button);
    }
  });

  function openIntroOnFirstPairs() {
    var marker = document.getElementById("intro-pairs");
    if (!marker) { return; }
    var limit = parseInt(marker.getAttribute("data-pairs"), 10) || 0;
    var position = marker.getAttribute("data-position");
    var store = null;
    try { store = window.sessionStorage; } catch (e) { return; }
    var seen = [];
    try { seen = JSON.parse(store.getItem("qrelkit.pairsSeen") || "[]"); } catch (e) { seen = []; }
    if (seen.indexOf(position) < 0 && seen.length < limit) {
      seen.push(position);
      store.setItem("qrelkit.pairsSeen", JSON.stringify(seen));
    }
    var closedByHand = store.getItem("qrelkit.introClosed") === "1";
    var details = document.querySelectorAll("details[data-intro]");
    var early = seen.indexOf(position) >= 0;
    for (var i = 0; i < details.length; i++) {
      if (closedByHand) { details[i].open = false; } else if (early) { details[i].open = true; }
      details[i].addEventListener("toggle", function (event) {
        if (event.isTrusted && !event.target.open) { store.setItem("qrelkit.introClosed", "1"); }
      });
    }
  }
})();
