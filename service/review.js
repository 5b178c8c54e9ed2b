"use strict";
// The review page's behaviour; served from the package as /review.js (the page's CSP runs no inline script).
const state = { token: sessionStorage.getItem("bias-audit-token") || "", items: [], index: 0, taxonomy: [],
                verdicts: {}, tags: new Set(), focus: 0, item: null };
const $ = (id) => document.getElementById(id);

async function gql(query, variables) {
  const headers = { "content-type": "application/json" };
  if (state.token) headers.authorization = "Bearer " + state.token;  // else the proxy's cookie, if any
  const response = await fetch("/graphql", { method: "POST", headers, body: JSON.stringify({ query, variables }) });
  if (response.status === 401) { openSignIn("Your token was refused or has expired."); throw new Error("unauthenticated"); }
  const answer = await response.json();
  if (answer.errors && answer.errors.length) {
    const error = answer.errors[0];
    throw new Error(((error.extensions && error.extensions.code) || "ERROR") + ": " + error.message);
  }
  return answer.data;
}

function say(text) { $("status").textContent = text; }

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

const ITEM_FIELDS = "id auditId tenantId llmModel llmProvider llmResponse logTimestamp biasType biasScore biasConfidenceScore " +
                    "mitigationAction biasReportSummary humanReviewed humanBiasTag reviewNotes";

function filterInput() {
  const filter = { biasDetected: true, humanReviewed: $("f-reviewed").value === "true" };
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
       <div>${escapeHtml(item.biasType.join(", "))} · ${Math.round(item.biasConfidenceScore * 100)}%</div>
       <div class="meta">${escapeHtml(item.tenantId)} · ${escapeHtml(item.llmModel || "?")} · ${escapeHtml(item.auditId)}</div></li>`).join("");
  const current = $("items").querySelector("li.current");
  if (current) current.scrollIntoView({ block: "nearest" });
}

async function openItem(i) {
  if (!state.items.length) { state.item = null; $("item").innerHTML = '<p class="empty">Nothing to review here. Change the filters, or come back later.</p>'; return; }
  state.index = Math.max(0, Math.min(i, state.items.length - 1));
  const item = state.items[state.index];
  state.item = item; state.verdicts = {}; state.tags = new Set(); state.focus = 0;
  if (item.humanBiasTag && item.humanBiasTag.verdicts) Object.assign(state.verdicts, item.humanBiasTag.verdicts);
  if (item.humanBiasTag && item.humanBiasTag.tags) item.humanBiasTag.tags.forEach((t) => state.tags.add(t));
  renderQueue();
  renderItem();
  if (!item.humanReviewed) {
    const lease = (await gql(`mutation($id: ID!) { openReviewItem(id: $id) { taken holder } }`, { id: item.id })).openReviewItem;
    if (!lease.taken) say(`${item.auditId} is open with ${lease.holder}; skip it (j)`);
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
    <h2>${escapeHtml(item.auditId)} <small>${escapeHtml(item.tenantId)} · ${escapeHtml(item.llmProvider || "")} ${escapeHtml(item.llmModel || "")} · ${escapeHtml(item.logTimestamp)}</small></h2>
    <div class="response" id="response">${highlighted(item.llmResponse, terms)}</div>
    <h3>Findings</h3>
    ${groups.map((g, i) => `
      <div class="finding ${i === state.focus ? "focused" : ""}" data-type="${escapeHtml(g.type)}">
        <span class="verdict ${state.verdicts[g.type] || ""}">${state.verdicts[g.type] || "undecided"}</span>
        <strong><span class="sev" title="severity (1-5)">${taxonomy[g.type] ? taxonomy[g.type].severityLevel : "?"}</span>${escapeHtml(g.type)}</strong>
        · score ${((item.biasScore || {})[g.type] ?? 0).toFixed(2)}
        <div>${escapeHtml(taxonomy[g.type] ? taxonomy[g.type].description : "")}</div>
        <ul>${g.findings.map((f) => `<li>${escapeHtml(f.mitigation || "")}</li>`).join("")}</ul>
      </div>`).join("")}
    <p>Suggested action: <strong>${escapeHtml(typeof item.mitigationAction === "string" ? item.mitigationAction : JSON.stringify(item.mitigationAction))}</strong></p>
    <h3>Tags</h3>
    <div id="tags">${state.taxonomy.slice(0, 9).map((t, i) => `<button data-tag="${escapeHtml(t.biasKey)}" class="${state.tags.has(t.biasKey) ? "on" : ""}">${i + 1} ${escapeHtml(t.biasKey)}</button>`).join("")}</div>
    <label for="notes">Notes</label>
    <textarea id="notes">${escapeHtml(item.reviewNotes || "")}</textarea>
    <div class="actions"><button id="save">Save and next (Enter)</button></div>`;
  $("save").onclick = saveAndNext;
  document.querySelectorAll("#tags button").forEach((b) => b.onclick = () => toggleTag(b.dataset.tag));
}

function toggleTag(tag) {
  if (state.tags.has(tag)) state.tags.delete(tag); else state.tags.add(tag);
  renderItem();
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
  try {
    await gql(`mutation($id: ID!, $input: RecordBiasReviewInput!) { recordBiasReview(id: $id, input: $input) { id humanReviewed } }`, { id: item.id, input });
  } catch (error) { say("not saved: " + error.message); return; }
  say("saved " + item.auditId);
  if ($("f-reviewed").value === "false") { state.items.splice(state.index, 1); await openItem(state.index); }
  else await openItem(state.index + 1);
}

function openSignIn(message) { $("signin-error").textContent = message || ""; $("signin").classList.add("open"); $("token").focus(); }

document.addEventListener("keydown", async (event) => {
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
  if (event.key === "Escape") { $("help").classList.remove("open"); if (typing) document.activeElement.blur(); return; }
  if (typing || $("signin").classList.contains("open")) return;
  const groups = state.item ? findingsByType(state.item) : [];
  if (event.key === "?") { $("help").classList.toggle("open"); }
  else if (event.key === "j") { await openItem(state.index + 1); }
  else if (event.key === "k") { await openItem(state.index - 1); }
  else if (event.key === "c") { decide("confirmed"); }
  else if (event.key === "d") { decide("dismissed"); }
  else if (event.key === "ArrowDown" && groups.length) { state.focus = Math.min(state.focus + 1, groups.length - 1); renderItem(); }
  else if (event.key === "ArrowUp" && groups.length) { state.focus = Math.max(state.focus - 1, 0); renderItem(); }
  else if (event.key === "n") { event.preventDefault(); $("notes").focus(); }
  else if (/^[1-9]$/.test(event.key)) { const t = state.taxonomy[Number(event.key) - 1]; if (t) toggleTag(t.biasKey); }
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
  await $("filters").addEventListener("submit", (event) => event.preventDefault());
start();
};

async function start() {
  try {
    const data = await gql(`{ biasTaxonomy { biasKey description severityLevel } }`);
    state.taxonomy = data.biasTaxonomy;
    $("f-type").innerHTML = '<option value="">any</option>' + state.taxonomy.map((t) => `<option>${escapeHtml(t.biasKey)}</option>`).join("");
    try { const claims = JSON.parse(atob(state.token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))); $("who").textContent = claims.sub || ""; } catch (e) { /* the proxy's cookie, or no auth */ }
    await loadQueue();
  } catch (error) { if (error.message !== "unauthenticated") say(error.message); }
}
$("filters").addEventListener("submit", (event) => event.preventDefault());
start();
