// Refreshes every block marked data-live (the runs table, the training
// curves) from the server every two seconds while the page is visible.
// The server renders the block; this script only swaps it in.
"use strict";
(function () {
  const every = 2000;
  async function refresh(el) {
    if (document.hidden) return;
    try {
      const r = await fetch(el.dataset.live, { credentials: "same-origin", cache: "no-store" });
      if (!r.ok) return;
      const doc = new DOMParser().parseFromString(await r.text(), "text/html");
      const next = doc.querySelector("[data-live]");
      if (next) el.replaceChildren(...next.childNodes);
    } catch (e) { /* offline for a moment: try again next time */ }
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-live]").forEach(function (el) {
      setInterval(function () { refresh(el); }, every);
    });
  });
})();
