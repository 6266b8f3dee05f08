// A figure shown smaller than it was drawn (on a phone, a figure 1200 pixels
// wide shrinks to a third) gets a "Full size" button under it; the button, or
// a tap or click on the figure, opens it at its own size in a dialog, where it
// scrolls (and a phone can zoom it further). The dialog is the browser's own
// <dialog>: Escape closes it, and the keyboard stays inside it while it is
// open; closing it returns to the button. The figure, its alt text and its
// caption stay as they are on the page. Checked by tests/test_browser_phone.py.
(function () {
  "use strict";

  // Figures of the text and images a cell draws; an explorer's picture changes
  // as its controls move, so it is left alone.
  var FIGURES = ".bd-article figure img, .bd-article .cell_output img";
  var SHRUNK = 1.15; // shown at less than 1/1.15 of its own width

  var dialog = null;
  var opener = null;

  function caption(img) {
    var figure = img.closest("figure");
    var number = figure && figure.querySelector("figcaption .caption-number");
    return number ? number.textContent.trim() : "";
  }

  function makeDialog() {
    dialog = document.createElement("dialog");
    dialog.className = "figure-zoom";
    dialog.setAttribute("aria-labelledby", "figure-zoom-title");
    var bar = document.createElement("div");
    bar.className = "figure-zoom-bar";
    var title = document.createElement("p");
    title.id = "figure-zoom-title";
    title.className = "figure-zoom-title";
    var close = document.createElement("button");
    close.type = "button";
    close.className = "btn figure-zoom-close";
    close.textContent = "Close";
    close.addEventListener("click", function () { dialog.close(); });
    bar.appendChild(title);
    bar.appendChild(close);
    var pane = document.createElement("div");
    pane.className = "figure-zoom-pane";
    pane.tabIndex = 0;
    pane.setAttribute("role", "group");
    pane.setAttribute("aria-label", "The figure at full size (scrolls)");
    dialog.appendChild(bar);
    dialog.appendChild(pane);
    // A click on the backdrop (outside the dialog's box) closes it too.
    dialog.addEventListener("click", function (event) {
      if (event.target === dialog) dialog.close();
    });
    dialog.addEventListener("close", function () {
      pane.replaceChildren();
      if (opener) opener.focus();
    });
    document.body.appendChild(dialog);
  }

  function open(img, button) {
    if (!dialog) makeDialog();
    opener = button;
    var big = img.cloneNode(false);
    big.removeAttribute("width");
    big.removeAttribute("height");
    big.removeAttribute("style");
    big.removeAttribute("loading");
    big.removeAttribute("class");
    var name = caption(img);
    dialog.querySelector(".figure-zoom-title").textContent = (name ? name + " " : "") + "at full size";
    dialog.querySelector(".figure-zoom-pane").replaceChildren(big);
    dialog.showModal();
    dialog.querySelector(".figure-zoom-close").focus();
  }

  function shrunk(img) {
    return img.naturalWidth > 0 && img.clientWidth > 0 && img.naturalWidth > img.clientWidth * SHRUNK;
  }

  var buttons = [];

  // Puts a hidden button under the figure; refresh() shows it if the figure is shrunk.
  function place(img) {
    if (img.dataset.figureZoom || img.closest(".explorer")) return;
    img.dataset.figureZoom = "1";
    var button = document.createElement("button");
    button.type = "button";
    button.className = "btn btn-sm figure-zoom-button";
    button.hidden = true;
    var name = caption(img);
    button.textContent = "Full size";
    button.setAttribute("aria-label", "Full size" + (name ? ": " + name : ": figure"));
    button.addEventListener("click", function () { open(img, button); });
    img.addEventListener("click", function () { if (!button.hidden) open(img, button); });
    img.insertAdjacentElement("afterend", button);
    var entry = { img: img, button: button };
    buttons.push(entry);
    if (!img.complete) img.addEventListener("load", function () { refresh([entry]); });
  }

  // Measures every figure first, then shows or hides the buttons: the browser
  // lays the page out once, not once per figure.
  function refresh(entries) {
    var show = entries.map(function (entry) { return shrunk(entry.img); });
    entries.forEach(function (entry, i) {
      entry.button.hidden = !show[i];
      entry.img.classList.toggle("figure-zoomable", show[i]);
    });
  }

  function start() {
    document.querySelectorAll(FIGURES).forEach(place);
    refresh(buttons);
    // A new width of the screen, or a figure in a dropdown that opens.
    if ("ResizeObserver" in window) {
      var observer = new ResizeObserver(function () { refresh(buttons); });
      buttons.forEach(function (entry) { observer.observe(entry.img); });
    } else {
      window.addEventListener("resize", function () { refresh(buttons); });
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
