"use strict";
// The review page's behaviour; served from the package as /review.js (the page's CSP runs no inline script).
const state = { token: sessionStorage.getItem("bias-audit-token") || "", items: [], index: 0, taxonomy: [],
                verdicts: {}, tags: new Set(), focus: 0, item: null, answerBiased: null };
const $ = (id) => document.getElementById(id);

async function gql(query, variables) {
  const headers = { "content-type": "application/json" };
  if (state.token) headers.authorization = "Bearer " + state.token;  // else the proxy's cookie, if any
  const response = await fetch("/graphql", { method: "POST", headers, body: JSON.stringify({ query, variables }) });
  if (response.status === 401) {
    openSignIn(state.token ? "That token was refused or has expired: paste a new one." : "Paste a bearer token (JWT) to sign in.");
    throw new Error("unauthenticated");
  }
  const answer = await response.json();
  if (answer.errors && answer.errors.length) {
    const error = answer.errors[0];
    const failure = new Error(((error.extensions && error.extensions.code) || "ERROR") + ": " + error.message);
    failure.code = error.extensions && error.extensions.code;
    throw failure;
  }
  return answer.data;
}

function say(text) { $("status").textContent = text; }

// one way of showing a 0-1 value everywhere: a percentage ("—" for anything that is not a number)
function percent(value) {
  const number = typeof value === "number" ? value : Number.NaN;
  return Number.isFinite(number) ? Math.round(number * 100) + "%" : "—";
}

const SEVERITY_WORDS = { 1: "very low", 2: "low", 3: "medium", 4: "high", 5: "severe" };
function severity(entry) {
  return entry ? `${SEVERITY_WORDS[entry.severityLevel] || "unknown"} severity (${entry.severityLevel} of 5)` : "unknown severity";
}

// these are found in councils' scores, never in one answer's text: not offered on a single answer
const COUNCIL_ONLY = new Set(["length", "position", "reviewer_calibration", "self_preference"]);

function tagChoices(item) {
  // every tag a single answer can carry, the item's own bias types first
  const usable = state.taxonomy.filter((t) => !COUNCIL_ONLY.has(t.biasKey));
  const own = item.biasType.map((key) => usable.find((t) => t.biasKey === key)).filter(Boolean);
  return [...own, ...usable.filter((t) => !item.biasType.includes(t.biasKey))];
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

function evidenceTerms(findings) {
  // the words and sentences each analyzer names as its evidence (nested evidence too)
  const terms = new Set();
  const add = (value) => { if (typeof value === "string" && value.trim().length > 1) terms.add(value); };
  const walk = (entries) => {
    for (const entry of entries || []) {
      for (const key of ["term", "matched", "phrase", "word", "sentence"]) add(entry[key]);
      for (const value of entry.matched_terms || []) add(value);
      walk(entry.evidence);
    }
  };
  for (const finding of findings) walk(finding.evidence);
  return [...terms].sort((a, b) => b.length - a.length);
}

function highlighted(text, terms) {
  if (!text) return "<em>(the response text was removed by retention)</em>";
  const lower = text.toLowerCase();
  const marks = [];  // [start, end) of each evidence occurrence, longest terms first, no overlaps
  for (const term of terms) {
    let at = lower.indexOf(term.toLowerCase());
    while (at >= 0) {
      const end = at + term.length;
      if (!marks.some(([s, e]) => at < e && end > s)) marks.push([at, end]);
      at = lower.indexOf(term.toLowerCase(), end);
    }
  }
  marks.sort((a, b) => a[0] - b[0]);
  let out = "", last = 0;
  for (const [s, e] of marks) { out += escapeHtml(text.slice(last, s)) + "<mark>" + escapeHtml(text.slice(s, e)) + "</mark>"; last = e; }
  return out + escapeHtml(text.slice(last));
}

const ITEM_FIELDS = "id auditId tenantId llmModel llmProvider llmResponse logTimestamp biasDetected biasType biasScore biasConfidenceScore " +
                    "mitigationAction biasReportSummary humanReviewed humanBiasTag reviewNotes";

function filterInput() {
  const filter = { humanReviewed: $("f-reviewed").value === "true" };  // the queue holds sampled unflagged answers too
  if ($("f-tenant").value.trim()) filter.tenantId = $("f-tenant").value.trim();
  if ($("f-model").value.trim()) filter.llmModel = $("f-model").value.trim();
  if ($("f-type").value) filter.biasType = $("f-type").value;
  if ($("f-start").value) filter.logTimestampStart = $("f-start").value + "T00:00:00Z";
  if ($("f-end").value) filter.logTimestampEnd = $("f-end").value + "T23:59:59Z";
  return filter;
}

async function loadQueue() {
  say("loading the queue…");
  const filter = filterInput();
  const data = filter.humanReviewed
    ? await gql(`query($f: LlmInteractionAuditFilterInput) { items: llmInteractionAudits(filter: $f, pagination: {limit: 200}) { ${ITEM_FIELDS} } }`, { f: filter })
    : await gql(`query($f: LlmInteractionAuditFilterInput) { items: reviewQueue(filter: $f, limit: 200) { ${ITEM_FIELDS} } }`, { f: filter });
  state.items = data.items || [];
  state.index = 0;
  renderQueue();
  await openItem(0);
  say(state.items.length + " items");
}

function renderQueue() {
  $("items").innerHTML = state.items.map((item, i) =>
    `<li data-i="${i}" class="${i === state.index ? "current" : ""}" aria-current="${i === state.index}">
       <div>${item.biasDetected ? escapeHtml(item.biasType.join(", ")) + " · confidence " + percent(item.biasConfidenceScore) : "sampled: nothing flagged"}</div>
       <div class="meta">${escapeHtml(item.tenantId)} · ${escapeHtml(item.llmModel || "?")} · ${escapeHtml(item.auditId)}</div></li>`).join("");
  const current = $("items").querySelector("li.current");
  if (current) current.scrollIntoView({ block: "nearest" });
}

async function openItem(i) {
  if (!state.items.length) { state.item = null; $("item").innerHTML = '<p class="empty">Nothing to review here. Change the filters, or come back later.</p>'; return; }
  state.index = Math.max(0, Math.min(i, state.items.length - 1));
  const item = state.items[state.index];
  state.item = item; state.verdicts = {}; state.tags = new Set(); state.focus = 0; state.answerBiased = null;
  if (item.humanBiasTag && item.humanBiasTag.verdicts) Object.assign(state.verdicts, item.humanBiasTag.verdicts);
  if (item.humanBiasTag && item.humanBiasTag.tags) item.humanBiasTag.tags.forEach((t) => state.tags.add(t));
  renderQueue();
  renderItem();
  if (!item.humanReviewed) {
    try {
      const lease = (await gql(`mutation($id: ID!) { openReviewItem(id: $id) { taken holder } }`, { id: item.id })).openReviewItem;
      if (!lease.taken) say(`${item.auditId} is open with ${lease.holder}; skip it (j)`);
    } catch (error) { say(error.message); }  // e.g. held too long: said, and the page goes on
  }
}

function findingsByType(item) {
  const findings = (item.biasReportSummary && item.biasReportSummary.findings) || [];
  return item.biasType.map((type) => ({ type, findings: findings.filter((f) => f.bias_type === type) }));
}

function renderItem() {
  const item = state.item;
  if (!item) return;
  const groups = findingsByType(item);
  const terms = evidenceTerms(groups.flatMap((g) => g.findings));
  const taxonomy = Object.fromEntries(state.taxonomy.map((t) => [t.biasKey, t]));
  $("item").innerHTML = `
    <h2>${escapeHtml(item.auditId)} <small>${escapeHtml(item.tenantId)} · ${escapeHtml(item.llmProvider || "")} ${escapeHtml(item.llmModel || "")} · ${escapeHtml(item.logTimestamp)} · confidence ${percent(item.biasConfidenceScore)}</small></h2>
    <div class="response" id="response">${highlighted(item.llmResponse, terms)}</div>
    ${item.biasDetected ? "" : `<div class="finding focused" id="sampled">
      <span class="verdict ${state.answerBiased === null ? "" : state.answerBiased ? "confirmed" : "dismissed"}">${state.answerBiased === null ? "undecided" : state.answerBiased ? "biased" : "not biased"}</span>
      <strong>Nothing was flagged on this answer.</strong> It is one of a random sample that measures what the detectors miss: is it biased?
      <div><button id="answer-biased">b biased (tag the types below)</button> <button id="answer-fine">u not biased</button></div></div>`}
    <h3>Findings</h3>
    ${groups.map((g, i) => `
      <div class="finding ${i === state.focus ? "focused" : ""}" data-type="${escapeHtml(g.type)}">
        <span class="verdict ${state.verdicts[g.type] || ""}">${state.verdicts[g.type] || "undecided"}</span>
        <strong>${escapeHtml(g.type)}</strong> · <span class="sev">${escapeHtml(severity(taxonomy[g.type]))}</span>
        · score ${percent(item.biasScore && typeof item.biasScore === "object" ? item.biasScore[g.type] : null)}
        <div>${escapeHtml(taxonomy[g.type] ? taxonomy[g.type].description : "")}</div>
        <ul>${g.findings.map((f) => `<li>${escapeHtml(f.mitigation || "")}</li>`).join("")}</ul>
      </div>`).join("")}
    <p>Suggested action: <strong>${escapeHtml(typeof item.mitigationAction === "string" ? item.mitigationAction : JSON.stringify(item.mitigationAction))}</strong></p>
    <h3>Tags</h3>
    <div id="tags" role="group" aria-label="tags (1-9 toggle the first nine; t, then Tab, reaches every one)">${tagChoices(item).map((t, i) => `<button data-tag="${escapeHtml(t.biasKey)}" class="${state.tags.has(t.biasKey) ? "on" : ""}" aria-pressed="${state.tags.has(t.biasKey)}">${i < 9 ? i + 1 + " " : ""}${escapeHtml(t.biasKey)}</button>`).join("")}</div>
    <label for="notes">Notes</label>
    <textarea id="notes">${escapeHtml(item.reviewNotes || "")}</textarea>
    <div class="actions"><button id="save">Save and next (Enter)</button></div>`;
  $("save").onclick = saveAndNext;
  if (!item.biasDetected) { $("answer-biased").onclick = () => judgeAnswer(true); $("answer-fine").onclick = () => judgeAnswer(false); }
  document.querySelectorAll("#tags button").forEach((b) => b.onclick = () => toggleTag(b.dataset.tag));
}

function toggleTag(tag) {
  const onTags = document.activeElement.closest && document.activeElement.closest("#tags");
  if (state.tags.has(tag)) state.tags.delete(tag); else state.tags.add(tag);
  const notes = $("notes").value;
  renderItem();
  $("notes").value = notes;
  if (onTags) {  // pressed with Space on a focused tag: focus stays there for the next one
    const again = document.querySelector(`#tags button[data-tag="${CSS.escape(tag)}"]`);
    if (again) again.focus();
  }
}

function judgeAnswer(biased) {
  if (!state.item || state.item.biasDetected) return;
  state.answerBiased = biased;
  const notes = $("notes").value;
  renderItem();
  $("notes").value = notes;
}

function decide(verdict) {
  const groups = findingsByType(state.item);
  if (!groups.length) return;
  state.verdicts[groups[state.focus].type] = verdict;
  state.focus = Math.min(state.focus + 1, groups.length - 1);
  const notes = $("notes").value;
  renderItem();
  $("notes").value = notes;
}

async function saveAndNext() {
  const item = state.item;
  if (!item) return;
  const input = { humanReviewed: true, humanBiasTag: [...state.tags], reviewNotes: $("notes").value || null, verdicts: state.verdicts };
  if (state.answerBiased !== null) input.answerBiased = state.answerBiased;
  try {
    await gql(`mutation($id: ID!, $input: RecordBiasReviewInput!) { recordBiasReview(id: $id, input: $input) { id humanReviewed } }`, { id: item.id, input });
  } catch (error) { say("not saved: " + error.message); return; }
  say("saved " + item.auditId);
  if ($("f-reviewed").value === "false") { state.items.splice(state.index, 1); await openItem(state.index); }
  else await openItem(state.index + 1);
}

function openSignIn(message) { $("signin-error").textContent = message || ""; $("signin").classList.add("open"); $("token").focus(); }

// Judge mode (/review?mode=judges): items sampled from LLM judges' verdicts, judged blind. The
// answers come in an order the server drew and remembers, without the models or the judge's
// verdict, under a review id for this person; the verdict goes back with that id only.
const JUDGE_MODE = new URLSearchParams(location.search).get("mode") === "judges";
const PREFERENCES = { "1": "A>>B", "2": "A>B", "3": "A=B", "4": "B>A", "5": "B>>A" };
const PREFERENCE_WORDS = { "A>>B": "A much better", "A>B": "A better", "A=B": "a tie", "B>A": "B better", "B>>A": "B much better" };
const judging = { item: null, done: 0 };

async function nextJudgeItem() {
  const data = await gql(`{ item: judgeReviewItem { reviewId tenantId question answers sampled } }`);
  judging.item = data.item;
  const item = judging.item;
  if (!item) {
    $("item").innerHTML = '<p class="empty">No sampled item is left for you to judge. Come back when the judges have judged more.</p>';
    return;
  }
  $("item").innerHTML = `
    <h2>Which answer is better? <small>${escapeHtml(item.tenantId)} · ${judging.done} judged here · the judge's verdict and the models are hidden</small></h2>
    ${item.question ? `<div class="question" id="question"><h3>Question</h3>${escapeHtml(item.question)}</div>` : ""}
    <div class="pair">
      <div><h3>Answer A</h3><div class="response" id="answer-a">${escapeHtml(item.answers[0])}</div></div>
      <div><h3>Answer B</h3><div class="response" id="answer-b">${escapeHtml(item.answers[1])}</div></div>
    </div>
    <div class="actions" id="choices">${Object.entries(PREFERENCES).map(([key, preference]) =>
      `<button data-preference="${preference}">${key} ${PREFERENCE_WORDS[preference]}</button>`).join("")}</div>`;
  document.querySelectorAll("#choices button").forEach((b) => b.onclick = () => judgeItem(b.dataset.preference));
}

async function judgeItem(preference) {
  const item = judging.item;
  if (!item) return;
  try {
    await gql(`mutation($r: String!, $p: String!) { recordJudgeVerdict(reviewId: $r, preference: $p) { counted } }`,
              { r: item.reviewId, p: preference });
  } catch (error) { say("not saved: " + error.message); return; }
  judging.done += 1;
  say(`saved: ${PREFERENCE_WORDS[preference]}`);
  await nextJudgeItem();
}

document.addEventListener("keydown", async (event) => {
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
  if (event.key === "Escape") { $("help").classList.remove("open"); if (typing) document.activeElement.blur(); return; }
  if (typing || $("signin").classList.contains("open")) return;
  if (JUDGE_MODE) {
    if (event.key === "?") $("help").classList.toggle("open");
    else if (PREFERENCES[event.key]) await judgeItem(PREFERENCES[event.key]);
    else return;
    event.preventDefault();
    return;
  }
  // Enter and Space on a focused button press it (a tag, say), as anywhere else
  if (document.activeElement.tagName === "BUTTON" && (event.key === "Enter" || event.key === " ")) return;
  const groups = state.item ? findingsByType(state.item) : [];
  if (event.key === "?") { $("help").classList.toggle("open"); }
  else if (event.key === "j") { await openItem(state.index + 1); }
  else if (event.key === "k") { await openItem(state.index - 1); }
  else if (event.key === "c") { decide("confirmed"); }
  else if (event.key === "d") { decide("dismissed"); }
  else if (event.key === "b") { judgeAnswer(true); }
  else if (event.key === "u") { judgeAnswer(false); }
  else if (event.key === "ArrowDown" && groups.length) { state.focus = Math.min(state.focus + 1, groups.length - 1); renderItem(); }
  else if (event.key === "ArrowUp" && groups.length) { state.focus = Math.max(state.focus - 1, 0); renderItem(); }
  else if (event.key === "n") { event.preventDefault(); $("notes").focus(); }
  else if (/^[1-9]$/.test(event.key) && state.item) { const t = tagChoices(state.item)[Number(event.key) - 1]; if (t) toggleTag(t.biasKey); }
  else if (event.key === "t" && state.item) { const first = document.querySelector("#tags button"); if (first) first.focus(); }
  else if (event.key === "Enter") { event.preventDefault(); await saveAndNext(); }
  else return;
  event.preventDefault();
});

$("items").addEventListener("click", (event) => { const li = event.target.closest("li"); if (li) openItem(Number(li.dataset.i)); });
$("help-button").onclick = () => $("help").classList.toggle("open");
for (const id of ["f-tenant", "f-model", "f-type", "f-reviewed", "f-start", "f-end"]) $(id).addEventListener("change", () => loadQueue().catch((e) => say(e.message)));
$("signin-button").onclick = async () => {
  state.token = $("token").value.trim();
  sessionStorage.setItem("bias-audit-token", state.token);
  $("signin").classList.remove("open");
  await start();
};

async function start() {
  try {
    try { const claims = JSON.parse(atob(state.token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))); $("who").textContent = claims.sub || ""; } catch (e) { /* the proxy's cookie, or no auth */ }
    if (JUDGE_MODE) { await nextJudgeItem(); return; }
    const data = await gql(`{ biasTaxonomy { biasKey description severityLevel } }`);
    state.taxonomy = data.biasTaxonomy;
    $("f-type").innerHTML = '<option value="">any</option>' + state.taxonomy.map((t) => `<option>${escapeHtml(t.biasKey)}</option>`).join("");
    await loadQueue();
  } catch (error) {
    if (error.message === "unauthenticated") { $("item").innerHTML = '<p class="empty">Sign in to see the review queue.</p>'; return; }
    say(error.message);
    $("item").innerHTML = error.code === "FORBIDDEN"
      ? '<p class="empty">This token may not review: the queue needs the role reviewer or admin. Press the button to sign in with another token.</p><p><button id="switch-token">Use another token</button></p>'
      : `<p class="empty">The queue could not be loaded: ${escapeHtml(error.message)}</p>`;
    if ($("switch-token")) $("switch-token").onclick = () => openSignIn("");
  }
}
$("filters").addEventListener("submit", (event) => event.preventDefault());
if (JUDGE_MODE) {
  document.querySelector("main").classList.add("judging");
  document.querySelector("header h1").textContent = "bias-audit: judge items blind";
  $("mode-link").textContent = "flagged items";
  $("mode-link").href = "/review";
}
start();
