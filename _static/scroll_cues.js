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

  // Every pass reads what it needs from all its boxes first and only then
  // changes their frames: the browser lays the page out once per pass, not
  // once per box (on a long chapter, the difference is felt on a phone).
  function measure(entry) {
    var box = entry.box;
    var wide = box.scrollWidth > box.clientWidth + 1;
    return {
      wide: wide,
      left: wide && box.scrollLeft > 1,
      right: wide && box.scrollLeft + box.clientWidth < box.scrollWidth - 1,
    };
  }

  function mark(entry, seen) {
    var box = entry.box;
    var frame = entry.frame;
    frame.classList.toggle("scroll-x", seen.wide);
    frame.classList.toggle("more-left", seen.left);
    frame.classList.toggle("more-right", seen.right);
    if (seen.wide && !box.hasAttribute("tabindex")) {
      box.setAttribute("tabindex", "0");
      box.dataset.scrollCueTabindex = "1";
    } else if (!seen.wide && box.dataset.scrollCueTabindex) {
      box.removeAttribute("tabindex");
      delete box.dataset.scrollCueTabindex;
    }
  }

  function update(entries) {
    var seen = entries.map(measure);
    entries.forEach(function (entry, i) { mark(entry, seen[i]); });
  }

  function paint(entries) {
    var colours = entries.map(function (entry) { return backdrop(entry.box); });
    entries.forEach(function (entry, i) {
      entry.frame.style.setProperty("--scroll-cue-backdrop", colours[i]);
    });
  }

  var observer = "ResizeObserver" in window ? new ResizeObserver(function () { update(framed); }) : null;

  // Starts following a box; the caller paints and updates the new entries together.
  function track(box, frame) {
    box.dataset.scrollCue = "1";
    var entry = { box: box, frame: frame };
    frame.classList.add("scroll-frame");
    framed.push(entry);
    box.addEventListener("scroll", function () { update([entry]); }, { passive: true });
    if (observer) observer.observe(box);
    return entry;
  }

  // Inline math cannot break across lines: one wider than its paragraph
  // (a long chain of equalities) becomes a small box of its own that scrolls.
  // Only those: a box that scrolls would sit a little off the line's baseline.
  function wideInlineMath(article) {
    var wide = [];
    article.querySelectorAll('mjx-container:not([display="true"])').forEach(function (math) {
      if (math.dataset.scrollCue || math.closest(".scroll-frame")) return;
      var block = math.parentElement;
      while (block && getComputedStyle(block).display.indexOf("inline") === 0) block = block.parentElement;
      if (block && math.getBoundingClientRect().width > block.clientWidth) wide.push(math);
    });
    return wide.map(function (math) {
      var frame = document.createElement("span");
      frame.className = "math-inline-frame";
      math.parentNode.insertBefore(frame, math);
      frame.appendChild(math);
      return track(math, frame);
    });
  }

  function setUp() {
    var article = document.querySelector(".bd-article") || document.body;
    var added = [];
    BOXES.forEach(function (pair) {
      article.querySelectorAll(pair[0]).forEach(function (box) {
        if (!box.dataset.scrollCue) added.push(track(box, pair[1](box)));
      });
    });
    added = added.concat(wideInlineMath(article));
    paint(added);
    update(added);
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
      document.fonts.ready.then(function () { update(framed); });
    }
    window.addEventListener("resize", function () { update(framed); });
    // Light and dark mode: the backdrop the fade blends into changes.
    new MutationObserver(function () { paint(framed); })
      .observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
