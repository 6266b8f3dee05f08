// Wide display equations, tables and code scroll sideways inside their own box
// (the page itself never does); this shows that they do. The box's frame gets
// the class scroll-x while its content is wider than the box, and more-left /
// more-right while there is more to see on that side: course.css draws a fade
// and an arrow on that edge (drawn by CSS, so screen readers ignore it). A box
// that scrolls can be reached with the keyboard and scrolled with the arrow
// keys. Checked by tests/test_browser_phone.py.
(function () {
  "use strict";

  // [selector of the box that scrolls, how to find its frame]
  var BOXES = [
    // MathJax's display math: the container scrolls inside div.math.
    ["div.math > mjx-container", function (box) { return box.parentElement; }],
    // Code and printed output: the pre scrolls inside div.highlight (or,
    // without highlighting, in a frame of its own).
    ["pre", function (box) {
      return box.parentElement.matches("div.highlight") ? box.parentElement : wrap(box);
    }],
    // The theme wraps each table in a box of its own: frame it.
    [".pst-scrollable-table-container", wrap],
    // A cell's HTML output (a quiz, a table from pandas) scrolls in its box.
    ["div.output.text_html", wrap],
  ];

  function wrap(box) {
    var parent = box.parentElement;
    if (parent && parent.classList.contains("scroll-frame")) return parent;
    var frame = document.createElement("div");
    frame.className = "scroll-frame";
    box.parentNode.insertBefore(frame, box);
    frame.appendChild(box);
    return frame;
  }

  // The colour behind the box (the fade blends into it): the first ancestor,
  // from the box up, that paints a background.
  function backdrop(box) {
    for (var node = box; node && node !== document.documentElement; node = node.parentElement) {
      var colour = getComputedStyle(node).backgroundColor;
      if (colour && colour !== "transparent" && !/rgba\(.*,\s*0\)$/.test(colour)) return colour;
    }
    return getComputedStyle(document.body).backgroundColor;
  }

  var framed = [];

  function update(entry) {
    var box = entry.box;
    var frame = entry.frame;
    var wide = box.scrollWidth > box.clientWidth + 1;
    frame.classList.toggle("scroll-x", wide);
    frame.classList.toggle("more-left", wide && box.scrollLeft > 1);
    frame.classList.toggle("more-right", wide && box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
    if (wide && !box.hasAttribute("tabindex")) {
      box.setAttribute("tabindex", "0");
      box.dataset.scrollCueTabindex = "1";
    } else if (!wide && box.dataset.scrollCueTabindex) {
      box.removeAttribute("tabindex");
      delete box.dataset.scrollCueTabindex;
    }
  }

  function paint(entry) {
    entry.frame.style.setProperty("--scroll-cue-backdrop", backdrop(entry.box));
  }

  var observer = "ResizeObserver" in window ? new ResizeObserver(function () { framed.forEach(update); }) : null;

  function track(box, frame) {
    box.dataset.scrollCue = "1";
    var entry = { box: box, frame: frame };
    frame.classList.add("scroll-frame");
    framed.push(entry);
    box.addEventListener("scroll", function () { update(entry); }, { passive: true });
    if (observer) observer.observe(box);
    paint(entry);
    update(entry);
  }

  // Inline math cannot break across lines: one wider than its paragraph
  // (a long chain of equalities) becomes a small box of its own that scrolls.
  // Only those: a box that scrolls would sit a little off the line's baseline.
  function wideInlineMath(article) {
    article.querySelectorAll('mjx-container:not([display="true"])').forEach(function (math) {
      if (math.dataset.scrollCue || math.closest(".scroll-frame")) return;
      var block = math.parentElement;
      while (block && getComputedStyle(block).display.indexOf("inline") === 0) block = block.parentElement;
      if (!block || math.getBoundingClientRect().width <= block.clientWidth) return;
      var frame = document.createElement("span");
      frame.className = "math-inline-frame";
      math.parentNode.insertBefore(frame, math);
      frame.appendChild(math);
      track(math, frame);
    });
  }

  function setUp() {
    var article = document.querySelector(".bd-article") || document.body;
    BOXES.forEach(function (pair) {
      article.querySelectorAll(pair[0]).forEach(function (box) {
        if (!box.dataset.scrollCue) track(box, pair[1](box));
      });
    });
    wideInlineMath(article);
  }

  function start() {
    setUp();
    // MathJax puts its container in place of the math's source once it has
    // typeset the page (and outputs may come later): look again whenever the
    // article changes, at most once per frame.
    var article = document.querySelector(".bd-article") || document.body;
    var pending = false;
    new MutationObserver(function () {
      if (pending) return;
      pending = true;
      requestAnimationFrame(function () { pending = false; setUp(); });
    }).observe(article, { childList: true, subtree: true });
    if (document.fonts && document.fonts.ready) {
      document.fonts.ready.then(function () { framed.forEach(update); });
    }
    window.addEventListener("resize", function () { framed.forEach(update); });
    // Light and dark mode: the backdrop the fade blends into changes.
    new MutationObserver(function () { framed.forEach(paint); })
      .observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
