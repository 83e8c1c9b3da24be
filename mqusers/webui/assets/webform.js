// mqusers in Locust's web UI: the Custom parameters in groups, each field's flag, default and help on a line
// under it, and the options only the command line sets. The data is #mqusers-form (webui.py adds both).
// Locust's React page owns the fields; this script only adds elements beside them, once each, whenever
// the page (re)draws them.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("mqusers-form").textContent);

  function element(tag, className, text) {
    const made = document.createElement(tag);
    made.className = className;
    if (text !== undefined) made.textContent = text;
    return made;
  }

  // Locust's page lists the fields by label, alphabetically; the flex column's "order" shows them group by
  // group (a heading first) without moving React's elements.
  function decorate() {
    let last = null;
    let group = null;
    Object.entries(DATA.fields).forEach(([label, note], i) => {
      const input = document.querySelector('input[name="' + CSS.escape(label) + '"]');
      const control = input && input.closest(".MuiFormControl-root");
      if (!control) return;
      last = control;
      const first = note.group !== group;
      group = note.group;
      if (control.dataset.mqusers) return;
      control.dataset.mqusers = note.group;
      control.style.order = String(2 * i + 2);
      if (first) {
        const heading = element("h3", "mqusers-group", note.group);
        heading.style.order = String(2 * i + 1);
        control.before(heading);
      }
      const help = element("p", "mqusers-help");
      help.append(element("code", "mqusers-flag", note.flag), " · " + note.default + " · " + note.help);
      control.append(help);
    });
    if (last && !document.querySelector(".mqusers-fixed")) {
      const fixed = element("div", "mqusers-fixed");
      fixed.style.order = "10000";
      fixed.append(element("h3", "mqusers-group", "Broker metrics and reports (set on the command line)"));
      const list = element("dl", "mqusers-fixed-list");
      DATA.fixed.forEach(([flag, value]) => {
        list.append(element("dt", "", flag), element("dd", "", value));
      });
      fixed.append(list);
      last.after(fixed);
    }
  }

  // Locust's edit form closes as it posts, so a refusal of a running test's edit would go unseen: mqusers'
  // refusals the page does not show itself stand in a banner until dismissed.
  function banner(message) {
    document.querySelectorAll(".mqusers-refused").forEach((old) => old.remove());
    const shown = element("div", "mqusers-refused");
    shown.setAttribute("role", "alert");
    const close = element("button", "mqusers-close", "×");
    close.type = "button";
    close.setAttribute("aria-label", "dismiss");
    close.onclick = () => shown.remove();
    shown.append(element("span", "", message), close);
    document.body.append(shown);
  }

  const fetched = window.fetch;
  window.fetch = async function (resource, init) {
    const response = await fetched.apply(this, arguments);
    const url = String(resource && resource.url ? resource.url : resource);
    if (/\/swarm$/.test(url) && response.headers.get("content-type") === "application/json") {
      response.clone().json().then((data) => {
        if (data.success === false && String(data.message).startsWith("mqusers:")) {
          setTimeout(() => {
            const root = document.getElementById("root");
            if (!root.innerText.includes(data.message)) banner(data.message);
          }, 300);
        }
      });
    }
    return response;
  };

  // A table wider than its box (a phone) gets a shade on each side that has more columns, and says so:
  // Locust's table gives no cue that it scrolls.
  function cueScrolling() {
    for (const box of document.querySelectorAll(".MuiTableContainer-root")) {
      const hidden = box.scrollWidth - box.clientWidth;
      box.classList.toggle("mqusers-more-right", hidden > 1 && box.scrollLeft < hidden - 1);
      box.classList.toggle("mqusers-more-left", hidden > 1 && box.scrollLeft > 1);
      if (!box.dataset.mqusersCue) {
        box.dataset.mqusersCue = "1";
        box.addEventListener("scroll", cueScrolling, { passive: true });
      }
    }
  }
  window.addEventListener("resize", cueScrolling);

  // The page redraws its tables every 2 s: decorate at most once a frame, however many changes came.
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      decorate();
      cueScrolling();
    });
  }).observe(document.body, { childList: true, subtree: true });
  decorate();
})();
