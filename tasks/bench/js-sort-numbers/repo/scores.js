"use strict";

/** The values sorted from smallest to largest, as a new array. */
function sortedNumbers(values) {
  return [...values].sort();
}

/** The `k` largest values, largest first. */
function topK(values, k) {
  return sortedNumbers(values).reverse().slice(0, k);
}

module.exports = { sortedNumbers, topK };
