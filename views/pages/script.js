const data = JSON.parse(document.getElementById("page-data").textContent);
function pre(text) { const element = document.createElement("pre"); element.textContent = text; return element; }
function fill(details) {
  const body = details.querySelector(":scope > .body");
  if (!body || details.dataset.filled) return;
  details.dataset.filled = "yes";
  if (details.dataset.text !== undefined) body.append(pre(data.texts[Number(details.dataset.text)]));
  if (details.dataset.context === undefined) return;
  for (const number of data.contexts[Number(details.dataset.context)]) {
    const [role, kind, text, tokens] = data.parts[number];
    const label = document.createElement("div");
    label.className = "part-label";
    label.textContent = `[${role} · ${kind} · ${tokens.toLocaleString("en")} tokens]`;
    body.append(label, pre(data.texts[text]));
  }
}
document.addEventListener("toggle", (event) => { if (event.target.open) fill(event.target); }, true);
window.addEventListener("beforeprint", () => document.querySelectorAll("details[open]").forEach(fill));
function openAll(open, which) {
  document.querySelectorAll(which).forEach((details) => { details.open = open; if (open) fill(details); });
}
document.getElementById("open-all").addEventListener("click", () => openAll(true, "details:not(.context)"));
document.getElementById("close-all").addEventListener("click", () => openAll(false, "details"));
// A link to a call inside a closed fold (a fact's "left at call N") opens the folds around it: the HTML standard
// asks a browser to do so itself, and Chromium does; this is for one that does not.
function reveal(id) {
  const target = id && document.getElementById(id);
  for (let fold = target && target.closest("details"); fold; fold = fold.parentElement && fold.parentElement.closest("details")) {
    fold.open = true;
  }
  if (target) target.scrollIntoView();
}
window.addEventListener("hashchange", () => reveal(decodeURIComponent(location.hash.slice(1))));
reveal(decodeURIComponent(location.hash.slice(1)));
// A folded text is not in the page until it opens, so the browser's own find cannot see it: this opens every
// fold whose text holds what is typed (and the folds around it), after which Ctrl-F finds it.
function texts(details) {
  const found = [];
  if (details.dataset.text !== undefined) found.push(data.texts[Number(details.dataset.text)]);
  if (details.dataset.context !== undefined) {
    for (const number of data.contexts[Number(details.dataset.context)]) found.push(data.texts[data.parts[number][2]]);
  }
  return found;
}
document.getElementById("find").addEventListener("submit", (event) => {
  event.preventDefault();
  const wanted = event.target.elements.text.value.trim().toLowerCase();
  if (!wanted) return;
  let opened = 0;
  for (const details of document.querySelectorAll("details[data-text], details[data-context]")) {
    if (details.open || !texts(details).some((text) => text.toLowerCase().includes(wanted))) continue;
    for (let fold = details; fold; fold = fold.parentElement && fold.parentElement.closest("details")) {
      fold.open = true;
      fill(fold);
    }
    opened += 1;
  }
  document.getElementById("found").textContent = opened ? `opened ${opened} fold${opened === 1 ? "" : "s"} that `
    + "hold it: Ctrl-F finds it now" : "no closed fold holds it";
});
