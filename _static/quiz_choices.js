// How a quiz's options (jupyterquiz) answer, from the keyboard and in
// "choose all that apply". Checked in tests/test_browser_study_widgets.py
// (keyboard) and tests/test_browser_progress.py (picks kept and restored).
//
// - An option is a label around a visually hidden radio button. In a radio
//   group the arrow keys check the next button, and checking is a click: the
//   arrow keys answered the question. Here they only move the focus to the
//   next or previous option; Space or Enter answers with the focused one.
// - A question with more than one right option ("choose all that apply"):
//   the package clears every pick on a wrong click (and again on the next
//   right one), so right picks already made were lost, and a reload could
//   show only the last click. Here each option is a checkbox; a click picks
//   it, marked right or wrong with its feedback, and a second click takes it
//   back; the count says how many right options are picked. The question is
//   answered right when every right option and no wrong one is picked
//   (_static/progress.js reads the marks).
(function () {
  "use strict";

  var STEPS = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1 };

  function feedbackOf(label) {
    return document.getElementById("fb" + label.id.split("-")[0]);
  }

  function isManyChoice(label) {
    var fb = feedbackOf(label);
    return Boolean(fb) && Number(fb.dataset.numcorrect) > 1;
  }

  function picked(label) {
    return label.classList.contains("correctButton") || label.classList.contains("incorrectButton");
  }

  function typeset(node) {
    var mj = window.MathJax;
    if (mj && mj.typesetPromise) {
      (mj.startup && mj.startup.promise ? mj.startup.promise : Promise.resolve())
        .then(function () { return mj.typesetPromise([node]); })
        .catch(function () {});
    }
  }

  // A click on an option of a "choose all that apply" question.
  function pickMany(event) {
    var label = this;
    var input = label.querySelector("input");
    // A click on the label's text would be passed on to its checkbox as a
    // second click: one click, one pick.
    if (event && event.target !== input) event.preventDefault();
    var fb = feedbackOf(label);
    var right = label.dataset.correct === "true";
    var taken = picked(label);
    label.classList.remove("correctButton", "incorrectButton");
    if (!taken) label.classList.add(right ? "correctButton" : "incorrectButton");
    label.dataset.answered = taken ? 0 : 1;
    if (input) input.checked = !taken;
    var labels = label.parentElement.querySelectorAll("label.MCButton");
    var rightPicks = 0;
    labels.forEach(function (each) {
      if (each.classList.contains("correctButton")) rightPicks += 1;
    });
    fb.dataset.answeredcorrect = rightPicks;
    var count = " [" + rightPicks + "/" + fb.dataset.numcorrect + "]";
    var said = taken ? "Taken back." : label.dataset.feedback || (right ? "Correct!" : "Incorrect.");
    if (!taken && !right) said += " Click it again to take it back.";
    fb.className = "Feedback" + (taken ? "" : right ? " correct" : " incorrect");
    fb.innerHTML = (typeof window.jaxify === "function" ? window.jaxify(said) : said) + count;
    typeset(fb);
  }

  function prepare(label) {
    if (label.onclick === pickMany || !isManyChoice(label)) return;
    label.onclick = pickMany;
    var input = label.querySelector("input[type=radio]");
    if (input) {
      input.type = "checkbox";
      input.removeAttribute("name");
      input.checked = picked(label);
    }
  }

  function prepareAll() {
    document.querySelectorAll(".Quiz label.MCButton").forEach(prepare);
  }

  // On the way down, before the option's own handler runs: a question shown
  // since the last look is prepared before its first click, whoever clicks
  // (the reader, or progress.js restoring earlier picks).
  document.addEventListener(
    "click",
    function (event) {
      var label = event.target instanceof Element && event.target.closest(".Quiz label.MCButton");
      if (label) prepare(label);
    },
    true
  );

  document.addEventListener(
    "keydown",
    function (event) {
      var input = event.target;
      if (!(input instanceof HTMLInputElement)) return;
      var label = input.closest(".Quiz label.MCButton");
      if (!label) return;
      var step = STEPS[event.key];
      if (step) {
        event.preventDefault();
        var inputs = Array.prototype.slice.call(label.parentElement.querySelectorAll("label.MCButton input"));
        var next = inputs[(inputs.indexOf(input) + step + inputs.length) % inputs.length];
        next.focus();
      } else if (event.key === " " || event.key === "Enter") {
        event.preventDefault();
        input.click();
      }
    },
    true
  );

  var pending = false;
  document.addEventListener("DOMContentLoaded", function () {
    prepareAll();
    new MutationObserver(function () {
      if (pending) return;
      pending = true;
      window.requestAnimationFrame(function () {
        pending = false;
        prepareAll();
      });
    }).observe(document.body, { childList: true, subtree: true });
  });
})();
