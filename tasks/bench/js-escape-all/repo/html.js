"use strict";

/** `text` with the characters that HTML gives a meaning (& < > ") replaced by entities. */
function escapeHtml(text) {
  return String(text)
    .replace("&", "&amp;")
    .replace("<", "&lt;")
    .replace(">", "&gt;")
    .replace('"', "&quot;");
}

/** A list item for a comment. */
function commentItem(author, body) {
  return `<li><b>${escapeHtml(author)}</b>: ${escapeHtml(body)}</li>`;
}

module.exports = { escapeHtml, commentItem };
