const test = require('node:test');
const { describe, it } = require('node:test');
const assert = require('node:assert');

test('adds', () => {
  assert.strictEqual(1 + 2, 3);
});

test('adds wrong', () => {
  console.log('garbage <testcase name="x"> on stdout');
  assert.strictEqual(2 + 2, 5);
});

test('skipped one', { skip: 'not today' }, () => {});
test('todo one', { todo: true }, () => {});

describe('Calculator', () => {
  it('multiplies', () => {
    assert.strictEqual(2 * 3, 6);
  });
  describe('division', () => {
    it('divides (evenly)', () => {
      assert.strictEqual(6 / 3, 2);
    });
    it('throws on zero?', () => {
      throw new Error('division exploded\nsecond line');
    });
  });
});

test('parent with subtests', async (t) => {
  await t.test('sub ok', () => {});
  await t.test('sub fails', () => { assert.ok(false, 'sub failed'); });
});
