"use strict";
const test = require("node:test");
const assert = require("node:assert");
const { sortedNumbers, topK } = require("../scores.js");

test("single digits are sorted", () => {
  assert.deepStrictEqual(sortedNumbers([3, 1, 2]), [1, 2, 3]);
});

test("topK takes the largest first", () => {
  assert.deepStrictEqual(topK([4, 8, 6], 2), [8, 6]);
});
