// Served as _static/widgets/widgets-setup.js and loaded just before the widget
// manager (embed-amd.js) on pages that hold saved widget state.
(function () {
  // The manager's modules load their icon fonts from the folder RequireJS says
  // the module lives in (by default under the page's own folder). Point every
  // @jupyter-widgets module to this folder, where the fonts are.
  var src = document.currentScript.src;
  var folder = src.slice(0, src.lastIndexOf("/"));
  window.require.config({
    paths: {
      "@jupyter-widgets": folder,
      "@jupyter-widgets/html-manager/dist": folder,
    },
  });

  // Plots that an explorer drew into an Output widget come back from the saved
  // state as images without alt text (JupyterLab's renderer sets none). Say
  // what they are; the chapter's captioned figures describe what they show.
  var ALT = "Plot drawn by the interactive explorer for the settings saved with this page " +
    "(open the chapter as a notebook to change them).";
  new MutationObserver(function () {
    document.querySelectorAll(".widget-subarea img:not([alt]), .widget-subarea img[alt='']")
      .forEach(function (img) { img.setAttribute("alt", ALT); });
  }).observe(document.documentElement, { childList: true, subtree: true });

  // Widget labels are typeset through MathJax 2's API (MathJax.Hub.Queue), but the
  // book runs MathJax 3: map that one call onto MathJax 3. MathJax is loaded with
  // `defer`, so it is in place when DOMContentLoaded fires, before widgets render.
  document.addEventListener("DOMContentLoaded", function () {
    var mj = window.MathJax;
    if (!mj || !mj.version || mj.version[0] !== "3" || mj.Hub) {
      return;
    }
    mj.Hub = {
      Queue: function (job) {
        var element = job && job[2];
        mj.startup.promise.then(function () {
          return mj.typesetPromise(element ? [element] : undefined);
        });
      },
    };
  });
})();
