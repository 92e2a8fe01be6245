"use strict";
const test = require("node:test");
const assert = require("node:assert");
const { escapeHtml, commentItem } = require("../html.js");

test("one special character is escaped", () => {
  assert.strictEqual(escapeHtml("a < b"), "a &lt; b");
  assert.strictEqual(escapeHtml("Tom & Jerry"), "Tom &amp; Jerry");
});

test("a comment is a list item", () => {
  assert.strictEqual(commentItem("ann", "hi"), "<li><b>ann</b>: hi</li>");
});
