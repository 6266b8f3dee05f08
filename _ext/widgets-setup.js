// Served as _static/widgets/widgets-setup.js and loaded just before the widget
// manager (embed-amd.js) on pages that hold saved widget state.
(function () {
  // The manager loads its icon fonts from the folder RequireJS says its module
  // lives in; by default that is the page's own folder. Point it to this one.
  var src = document.currentScript.src;
  var folder = src.slice(0, src.lastIndexOf("/"));
  window.require.config({ paths: { "@jupyter-widgets/html-manager/dist": folder } });

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
