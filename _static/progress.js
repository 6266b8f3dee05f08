// The learner's progress, kept in this browser only (localStorage, one
// versioned key): quiz answers per chapter, chapters marked done, and the
// flashcards' review schedule. Nothing is sent anywhere.
//
// The pages say what they hold (sdpa_course/teaching/study.py writes it): each quiz is
// preceded by <script class="study-quiz-data"> (the chapter, and each question's
// id and options); the progress and review pages read the catalogue of every
// chapter's question and card ids (_static/study/catalog.js). Answers are
// stored by question id and option text, never by position: the quiz shuffles
// its options on every load.
(function () {
  "use strict";

  var KEY = "attention-course-progress-v1";
  var VERSION = 1;
  // New cards the review page introduces per calendar day (documented on the page).
  var NEW_CARDS_PER_DAY = 10;
  var RATINGS = [
    { name: "Again", key: "Again", hint: "you did not know it" },
    { name: "Hard", key: "Hard", hint: "you knew it, with effort" },
    { name: "Good", key: "Good", hint: "you knew it" },
    { name: "Easy", key: "Easy", hint: "you knew it at once" },
  ];
  var SCRIPT_FOLDER = (function () {
    var src = document.currentScript && document.currentScript.src;
    return src ? src.slice(0, src.lastIndexOf("/")) : "";
  })();

  // ------------------------------------------------------------------ storage

  function emptyState() {
    return { version: VERSION, chapters: {}, cards: {}, newCards: { day: "", count: 0 } };
  }

  function problemWith(state) {
    if (!state || typeof state !== "object" || Array.isArray(state)) return "it is not a JSON object";
    if (state.version !== VERSION) return "its version is " + JSON.stringify(state.version) + ", not " + VERSION;
    if (!state.chapters || typeof state.chapters !== "object") return "it has no \"chapters\" object";
    if (!state.cards || typeof state.cards !== "object") return "it has no \"cards\" object";
    return "";
  }

  function load() {
    var raw = null;
    try {
      raw = window.localStorage.getItem(KEY);
    } catch (err) {
      return emptyState();
    }
    if (!raw) return emptyState();
    try {
      var state = JSON.parse(raw);
      if (!problemWith(state)) {
        state.newCards = state.newCards || { day: "", count: 0 };
        return state;
      }
    } catch (err) {
      /* unreadable: start again, but keep what was there (below) */
    }
    // Never overwrite what cannot be read: keep it under a second key.
    window.localStorage.setItem(KEY + "-unreadable", raw);
    return emptyState();
  }

  function save(state) {
    window.localStorage.setItem(KEY, JSON.stringify(state));
  }

  function chapterOf(state, chapter) {
    if (!state.chapters[chapter]) state.chapters[chapter] = { done: false, quiz: {} };
    var entry = state.chapters[chapter];
    entry.quiz = entry.quiz || {};
    return entry;
  }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      if (name === "text") node.textContent = attrs[name];
      else if (name === "html") node.innerHTML = attrs[name];
      else node.setAttribute(name, attrs[name]);
    });
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function typeset(node) {
    if (window.MathJax && MathJax.typesetPromise) {
      var ready = MathJax.startup && MathJax.startup.promise ? MathJax.startup.promise : Promise.resolve();
      return ready.then(function () { return MathJax.typesetPromise([node]); }).catch(function () {});
    }
    return Promise.resolve();
  }

  function readJSON(script) {
    try {
      return JSON.parse(script.textContent);
    } catch (err) {
      return null;
    }
  }

  // ------------------------------------------------------------------ quizzes

  // The quiz container (jupyterquiz's div with data-preserveresponses) that
  // follows a marker in the page.
  function quizAfter(marker) {
    var all = document.querySelectorAll("div[data-preserveresponses]");
    for (var i = 0; i < all.length; i++) {
      if (marker.compareDocumentPosition(all[i]) & Node.DOCUMENT_POSITION_FOLLOWING) return all[i];
    }
    return null;
  }

  function optionOf(question, label) {
    var feedback = label.getAttribute("data-feedback");
    for (var i = 0; i < question.options.length; i++) {
      if (question.options[i].feedback === feedback) return question.options[i];
    }
    return null;
  }

  // What the learner has answered, read from the quiz as it is now shown.
  function readAnswer(question, wrap) {
    if (question.type === "numeric") {
      var input = wrap.querySelector("input.Input-text");
      if (!input || !/correctButton|incorrectButton/.test(input.className) || input.value === "") return null;
      return { answers: [input.value], correct: input.classList.contains("correctButton") };
    }
    var chosen = [];
    var allRight = true;
    wrap.querySelectorAll("label.MCButton").forEach(function (label) {
      if (label.classList.contains("correctButton") || label.classList.contains("incorrectButton")) {
        var option = optionOf(question, label);
        if (option) {
          chosen.push(option.text);
          if (!option.correct) allRight = false;
        }
      }
    });
    // Every pick of "choose all that apply" taken back: nothing is answered.
    if (!chosen.length) return question.type === "many_choice" ? { answers: [], correct: false } : null;
    var needed = question.options.filter(function (o) { return o.correct; }).length;
    return { answers: chosen, correct: allRight && chosen.length === needed };
  }

  function restoreAnswer(question, wrap, stored) {
    if (question.type === "numeric") {
      var input = wrap.querySelector("input.Input-text");
      if (!input || typeof input.onkeypress !== "function") return;
      input.value = stored.answers[0];
      input.onkeypress.call(input, { which: 13, keyCode: 13 });
      return;
    }
    stored.answers.forEach(function (text) {
      var option = question.options.filter(function (o) { return o.text === text; })[0];
      if (!option) return; // the question's options have changed since
      wrap.querySelectorAll("label.MCButton").forEach(function (label) {
        if (label.getAttribute("data-feedback") === option.feedback) label.click();
      });
    });
  }

  function doneBox(chapter) {
    var id = "study-done-" + chapter;
    var box = el("input", { type: "checkbox", id: id, class: "study-done-box" });
    var mine = load().chapters[chapter];
    box.checked = Boolean(mine && mine.done);
    box.addEventListener("change", function () {
      var state = load();
      chapterOf(state, chapter).done = box.checked;
      save(state);
    });
    return el("p", { class: "study-done" }, [
      box,
      // The spaces are text of their own: a label's trailing space is dropped
      // where the label is laid out as a box of its own.
      " ",
      el("label", { for: id, text: "I have finished this chapter" }),
      " (shown on ",
      el("a", { href: SCRIPT_FOLDER + "/../appendix/progress.html", text: "Your progress" }),
      ")",
    ]);
  }

  function setUpQuiz(marker) {
    var data = readJSON(marker);
    var container = data && quizAfter(marker);
    if (!container) return;
    var chapter = data.chapter;
    var wraps = container.querySelectorAll(".Quiz");
    var restoring = false;
    var stored = (load().chapters[chapter] || { quiz: {} }).quiz || {};
    var restored = 0;

    function record(wrap) {
      if (restoring || !wrap) return;
      var question = data.questions[Number(wrap.getAttribute("data-qnum"))];
      var answer = question && readAnswer(question, wrap);
      if (!answer) return;
      var state = load();
      var quiz = chapterOf(state, chapter).quiz;
      if (answer.answers.length) {
        answer.at = new Date().toISOString();
        quiz[question.id] = answer;
      } else {
        delete quiz[question.id];
      }
      save(state);
    }

    var x = window.scrollX;
    var y = window.scrollY;
    restoring = true;
    wraps.forEach(function (wrap) {
      var question = data.questions[Number(wrap.getAttribute("data-qnum"))];
      if (question && stored[question.id]) {
        restoreAnswer(question, wrap, stored[question.id]);
        restored += 1;
      }
    });
    restoring = false;
    // A restored right numeric answer moves the focus to the next question (the
    // quiz's own behaviour); a returning reader should stay where the page opens.
    if (restored && document.activeElement && container.contains(document.activeElement)) {
      document.activeElement.blur();
      window.scrollTo(x, y);
    }

    container.addEventListener("click", function (event) {
      var wrap = event.target.closest && event.target.closest(".Quiz");
      setTimeout(function () { record(wrap); }, 0);
    });
    // The quiz checks a typed answer on keypress and then takes the focus
    // away (keyup reaches the page, not the field): listen to keypress too.
    container.addEventListener("keypress", function (event) {
      if (event.key !== "Enter") return;
      var wrap = event.target.closest && event.target.closest(".Quiz");
      setTimeout(function () { record(wrap); }, 0);
    });

    var note = el("p", { class: "study-note", role: "status" });
    note.textContent = restored
      ? "Your earlier answers to " + restored + " of these questions are shown; they are kept in this browser only."
      : "Your answers are kept in this browser only, and shown again when you come back.";
    container.parentNode.insertBefore(note, container);
    container.parentNode.insertBefore(doneBox(chapter), container.nextSibling);
  }

  // ------------------------------------------------------------------ catalog

  // The catalogue of every chapter's questions and cards (_static/study/catalog.js,
  // written at every build by _ext/offline_site.py).
  function catalogOf() {
    return window.STUDY_CATALOG || [];
  }

  function pageLink(root, entry) {
    return (root.getAttribute("data-root") || "..") + "/" + entry.page;
  }

  function isDue(schedule, now) {
    return schedule && new Date(schedule.due).getTime() <= now.getTime();
  }

  function today(now) {
    var d = now || new Date();
    var pad = function (n) { return (n < 10 ? "0" : "") + n; };
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate());
  }

  // ------------------------------------------------------------------ progress page

  function renderProgress(root) {
    var catalog = catalogOf();
    var state = load();
    var now = new Date();
    root.innerHTML = "";
    var table = el("table", { class: "study-progress-table table" });
    table.appendChild(el("caption", { text: "Your progress in each chapter (kept in this browser)" }));
    var head = el("tr", {}, ["Chapter", "Quiz answered", "Quiz right", "Cards due now", "Cards not yet seen", "Done"]
      .map(function (h) { return el("th", { scope: "col", text: h }); }));
    table.appendChild(el("thead", {}, [head]));
    var body = el("tbody");
    var totals = { answered: 0, right: 0, questions: 0, due: 0, fresh: 0, done: 0 };
    catalog.forEach(function (entry) {
      var mine = state.chapters[entry.chapter] || { done: false, quiz: {} };
      var quiz = mine.quiz || {};
      var answered = entry.questions.filter(function (id) { return quiz[id]; }).length;
      var right = entry.questions.filter(function (id) { return quiz[id] && quiz[id].correct; }).length;
      var due = entry.cards.filter(function (c) { return isDue(state.cards[c.id], now); }).length;
      var fresh = entry.cards.filter(function (c) { return !state.cards[c.id]; }).length;
      totals.answered += answered; totals.right += right; totals.questions += entry.questions.length;
      totals.due += due; totals.fresh += fresh; totals.done += mine.done ? 1 : 0;
      var id = "study-progress-done-" + entry.chapter;
      var box = el("input", { type: "checkbox", id: id });
      box.checked = Boolean(mine.done);
      box.addEventListener("change", function () {
        var s = load();
        chapterOf(s, entry.chapter).done = box.checked;
        save(s);
        renderProgress(root);
        document.getElementById(id).focus();
      });
      var row = el("tr", { "data-chapter": entry.chapter }, [
        el("th", { scope: "row" }, [el("a", { href: pageLink(root, entry), text: entry.title })]),
        el("td", { class: "study-answered", text: answered + " of " + entry.questions.length }),
        el("td", { class: "study-right", text: String(right) }),
        el("td", { class: "study-due", text: String(due) }),
        el("td", { class: "study-new", text: String(fresh) + " of " + entry.cards.length }),
        el("td", { class: "study-done-cell" }, [box, el("label", { for: id, class: "visually-hidden", text: "Mark " + entry.title + " as done" })]),
      ]);
      body.appendChild(row);
    });
    table.appendChild(body);
    root.appendChild(el("p", { class: "study-summary", text:
      "Quiz questions answered: " + totals.answered + " of " + totals.questions + ", " + totals.right +
      " of them right. Flashcards due now: " + totals.due + "; not yet seen: " + totals.fresh +
      ". Chapters done: " + totals.done + " of " + catalog.length + "." }));
    root.appendChild(el("div", { class: "study-table-wrap" }, [table]));

    var status = el("p", { class: "study-status", role: "status", "aria-live": "polite" });
    var exportButton = el("button", { type: "button", class: "study-button", text: "Export progress to a file" });
    exportButton.addEventListener("click", function () {
      var blob = new Blob([JSON.stringify(load(), null, 1) + "\n"], { type: "application/json" });
      var link = el("a", { href: URL.createObjectURL(blob), download: "attention-course-progress.json" });
      document.body.appendChild(link);
      link.click();
      link.remove();
      setTimeout(function () { URL.revokeObjectURL(link.href); }, 1000);
      status.textContent = "Saved as attention-course-progress.json (see your browser's downloads).";
    });
    var fileInput = el("input", { type: "file", id: "study-import-file", accept: ".json,application/json", class: "study-file" });
    fileInput.addEventListener("change", function () {
      var file = fileInput.files && fileInput.files[0];
      if (!file) return;
      file.text().then(function (text) {
        var incoming;
        try {
          incoming = JSON.parse(text);
        } catch (err) {
          status.textContent = "Not imported: " + file.name + " is not JSON (" + err.message + ").";
          return;
        }
        var problem = problemWith(incoming);
        if (problem) {
          status.textContent = "Not imported: " + file.name + " is not a progress file of this course (" + problem + ").";
          return;
        }
        if (!window.confirm("Replace the progress kept in this browser with the one in " + file.name + "?")) {
          status.textContent = "Nothing imported; your progress is unchanged.";
          return;
        }
        save(incoming);
        renderProgress(root);
        root.querySelector(".study-status").textContent = "Imported " + file.name + ".";
      });
    });
    var resetButton = el("button", { type: "button", class: "study-button study-danger", text: "Reset progress…" });
    resetButton.addEventListener("click", function () {
      if (!window.confirm("Delete all your progress kept in this browser (quiz answers, chapters done, flashcard schedule)? Export it first to keep a copy.")) {
        status.textContent = "Nothing deleted.";
        return;
      }
      window.localStorage.removeItem(KEY);
      renderProgress(root);
      root.querySelector(".study-status").textContent = "Your progress was deleted.";
    });
    root.appendChild(el("div", { class: "study-actions" }, [
      exportButton,
      fileInput,
      el("label", { for: "study-import-file", class: "study-button", text: "Import progress from a file…" }),
      resetButton,
    ]));
    root.appendChild(status);
  }

  // ------------------------------------------------------------------ review page

  // A script of the site's _static/study folder (a script element, not a fetch:
  // it works from file:// too).
  function loadScript(name, then, failed) {
    var script = el("script", { src: SCRIPT_FOLDER + "/study/" + name });
    script.onload = then;
    script.onerror = failed;
    document.head.appendChild(script);
  }

  function toCard(stored) {
    var card = Object.assign({}, stored);
    card.due = new Date(stored.due);
    card.last_review = stored.last_review ? new Date(stored.last_review) : undefined;
    return card;
  }

  function fromCard(card) {
    var out = Object.assign({}, card);
    out.due = card.due.toISOString();
    out.last_review = card.last_review ? new Date(card.last_review).toISOString() : null;
    return out;
  }

  function describeWait(from, to) {
    var minutes = Math.round((to.getTime() - from.getTime()) / 60000);
    if (minutes < 60) return minutes + (minutes === 1 ? " minute" : " minutes");
    var hours = Math.round(minutes / 60);
    if (hours < 24) return hours + (hours === 1 ? " hour" : " hours");
    var days = Math.round(hours / 24);
    return days + (days === 1 ? " day" : " days");
  }

  // The cards to ask now: those due (longest overdue first), then new cards in
  // book order, as many as today's allowance leaves.
  function queueOf(catalog, state, now) {
    var due = [];
    var fresh = [];
    catalog.forEach(function (entry) {
      entry.cards.forEach(function (card) {
        var item = { card: card, entry: entry };
        var schedule = state.cards[card.id];
        if (!schedule) fresh.push(item);
        else if (isDue(schedule, now)) due.push(item);
      });
    });
    due.sort(function (a, b) {
      return new Date(state.cards[a.card.id].due) - new Date(state.cards[b.card.id].due);
    });
    var used = state.newCards && state.newCards.day === today(now) ? state.newCards.count : 0;
    return { due: due, fresh: fresh.slice(0, Math.max(0, NEW_CARDS_PER_DAY - used)), unseen: fresh.length };
  }

  function renderReview(root) {
    var catalog = catalogOf();
    var scheduler = FSRS.fsrs(FSRS.generatorParameters());
    root.innerHTML = "";
    var counts = el("p", { class: "study-counts", role: "status", "aria-live": "polite" });
    var region = el("section", { class: "study-card", "aria-label": "Flashcard" });
    root.appendChild(counts);
    root.appendChild(region);

    var pending = null;

    function next() {
      clearTimeout(pending);
      var state = load();
      var now = new Date();
      var queue = queueOf(catalog, state, now);
      var items = queue.due.concat(queue.fresh);
      counts.textContent = "Due now: " + queue.due.length + ". New today: " + queue.fresh.length +
        " (of " + queue.unseen + " cards not yet seen).";
      region.innerHTML = "";
      if (!items.length) {
        var upcoming = Object.keys(state.cards).map(function (id) { return new Date(state.cards[id].due); })
          .filter(function (d) { return d > now; }).sort(function (a, b) { return a - b; })[0];
        region.appendChild(el("p", { class: "study-empty", text: upcoming
          ? "No card is due now. The next one is due in " + describeWait(now, upcoming) + " (" + upcoming.toLocaleString() + ")."
          : "No card is due now." }));
        // A card coming back within the hour is asked again without a reload.
        if (upcoming && upcoming - now < 3600 * 1000) {
          pending = setTimeout(next, upcoming - now + 500);
        }
        return;
      }
      var item = items[0];
      var stored = state.cards[item.card.id];
      var card = stored ? toCard(stored) : FSRS.createEmptyCard(now);
      region.setAttribute("data-card", item.card.id);
      region.appendChild(el("p", { class: "study-card-chapter", text: item.entry.title }));
      var front = el("div", { class: "study-front", html: item.card.front });
      region.appendChild(el("h2", { class: "study-card-heading", text: "Question" }));
      region.appendChild(front);
      var show = el("button", { type: "button", class: "study-button study-show", text: "Show answer" });
      region.appendChild(show);
      typeset(front);
      show.addEventListener("click", function () {
        show.remove();
        var back = el("div", { class: "study-back", html: item.card.back, tabindex: "-1" });
        region.appendChild(el("h2", { class: "study-card-heading", text: "Answer" }));
        region.appendChild(back);
        // The focus goes to the answer (read next), then Tab reaches the ratings.
        back.focus();
        var when = new Date();
        var preview = scheduler.repeat(card, when);
        var buttons = el("div", { class: "study-ratings", role: "group", "aria-label": "How well did you know it?" });
        RATINGS.forEach(function (rating) {
          var result = preview[FSRS.Rating[rating.key]];
          var wait = describeWait(when, result.card.due);
          var button = el("button", {
            type: "button",
            class: "study-button study-rate",
            "data-rating": rating.name,
            title: rating.name + ": " + rating.hint,
          }, [
            el("span", { class: "study-rate-name", text: rating.name }),
            el("span", { class: "study-rate-wait", text: " next in " + wait }),
          ]);
          button.addEventListener("click", function () {
            var s = load();
            var isNew = !s.cards[item.card.id];
            s.cards[item.card.id] = fromCard(scheduler.next(card, when, FSRS.Rating[rating.key]).card);
            if (isNew) {
              var day = today(when);
              if (!s.newCards || s.newCards.day !== day) s.newCards = { day: day, count: 0 };
              s.newCards.count += 1;
            }
            save(s);
            next();
            var focus = region.querySelector(".study-show");
            if (focus) focus.focus();
          });
          buttons.appendChild(button);
        });
        region.appendChild(buttons);
        typeset(back);
      });
    }
    next();
  }

  // ------------------------------------------------------------------ start

  function start() {
    document.querySelectorAll("script.study-quiz-data").forEach(setUpQuiz);
    var progress = document.querySelectorAll(".study-progress");
    var review = document.querySelectorAll(".study-review");
    if (!progress.length && !review.length) return;
    var failed = function () {
      document.querySelectorAll(".study-needs-script").forEach(function (p) {
        p.textContent = "This page's data (_static/study) could not be loaded: the site's copy is incomplete.";
      });
    };
    loadScript("catalog.js", function () {
      progress.forEach(renderProgress);
      if (review.length) {
        loadScript("ts-fsrs.umd.js", function () { review.forEach(renderReview); }, failed);
      }
    }, failed);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
