// Accessibility repairs for markup the book does not write itself: the quizzes
// (jupyterquiz), the flashcards (jupytercards), the theme's search button and Sphinx's bibliography. Each
// repair is small and idempotent; it runs once MathJax has typeset the page
// (quiz answers may be only math) and again whenever the page changes
// (quizzes and cards build their markup with scripts). Checked by axe-core in
// tests/test_browser_pages.py; the keyboard paths by tests/test_browser_study_widgets.py.
(function () {
  "use strict";

  function repair() {
    // A numeric quiz answer: the visible "Type numeric answer here:" label is
    // not tied to its text field.
    document.querySelectorAll(".Quiz .Answer").forEach(function (answer) {
      var label = answer.querySelector("label.InpLabel");
      var input = answer.querySelector("input[type=text]");
      if (label && input && input.id && !label.htmlFor) {
        label.htmlFor = input.id;
      }
    });
    // A choice is a radio button or checkbox inside its label; when the
    // answer is only math, the label has no text a screen reader can use
    // until MathJax has typeset it: name the button after the typeset label.
    document.querySelectorAll(".Quiz label input[type=radio], .Quiz label input[type=checkbox]")
      .forEach(function (input) {
        var label = input.closest("label");
        if (label && label.querySelector("mjx-container")) {
          var text = label.textContent.replace(/\s+/g, " ").trim();
          if (text && input.getAttribute("aria-label") !== text) {
            input.setAttribute("aria-label", text);
          }
        }
      });
    // A flashcard's check mark ("I know this card": it leaves the deck) and
    // cross ("not yet": it comes back later) are bare icons that act on a
    // click: make each a named button, with the same words as a tooltip,
    // that the keyboard can reach and press.
    document.querySelectorAll(".flashcardKnown, .flashcardNotKnown").forEach(function (icon) {
      if (icon.getAttribute("role") === "button") return;
      var known = icon.classList.contains("flashcardKnown");
      var name = known ? "I know this card: take it out of the deck" : "Not yet: keep this card in the deck";
      icon.setAttribute("role", "button");
      icon.setAttribute("tabindex", "0");
      icon.setAttribute("aria-label", name);
      icon.setAttribute("title", name);
      icon.querySelectorAll("svg").forEach(function (svg) { svg.setAttribute("aria-hidden", "true"); });
      icon.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          // The deck itself turns the card on Enter: this key is the icon's.
          event.preventDefault();
          event.stopPropagation();
          icon.click();
        }
      });
    });
    // The theme's search button shows "Search Ctrl+K" but is named "Search":
    // let its visible text be its name.
    document.querySelectorAll(".search-button-field[aria-label]").forEach(function (button) {
      button.removeAttribute("aria-label");
    });
    // A folded cell or dropdown: its summary shows "Show code cell source"
    // (or the dropdown's title) but is named "Toggle hidden content": let the
    // visible text be its name.
    document.querySelectorAll("summary[aria-label]").forEach(function (summary) {
      if (summary.textContent.trim()) summary.removeAttribute("aria-label");
    });
    // The theme's colour-mode button is named "Color mode"; its icons carry
    // titles of their own ("Light", "Dark") that contradict the name: hide
    // the icons from assistive technology, the name says what the button does.
    document.querySelectorAll(".theme-switch-button svg").forEach(function (icon) {
      icon.setAttribute("aria-hidden", "true");
      icon.removeAttribute("aria-labelledby");
      icon.querySelectorAll("title").forEach(function (title) { title.remove(); });
    });
    // Sphinx marks references with the deprecated role doc-biblioentry inside
    // a role="list": make them list items.
    document.querySelectorAll('[role="doc-biblioentry"]').forEach(function (entry) {
      entry.setAttribute("role", "listitem");
    });
    document.querySelectorAll(".citation-list [role=doc-backlink]").forEach(function (link) {
      link.removeAttribute("role");
    });
  }

  var pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () {
      pending = false;
      repair();
    });
  }

  // A flashcard deck (jupytercards) handles every key pressed on it and calls
  // preventDefault() on each, Tab included, so the focus could never leave the
  // deck. Tab and Shift+Tab are kept from the deck's handler (caught before it,
  // on the way down): the browser moves the focus as it does everywhere else.
  document.addEventListener(
    "keydown",
    function (event) {
      if (event.key === "Tab" && event.target instanceof Element && event.target.closest(".flip-container")) {
        event.stopPropagation();
      }
    },
    true
  );

  document.addEventListener("DOMContentLoaded", function () {
    repair();
    new MutationObserver(schedule).observe(document.body, { childList: true, subtree: true });
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) {
      mj.startup.promise.then(repair);
    }
  });
})();
