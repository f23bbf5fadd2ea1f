// Keyboard grading: digit keys grade, U marks unsure, Backspace goes back one pair.
// The page works without this script: every action is a plain form button or link.
(function () {
  "use strict";
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
})();
