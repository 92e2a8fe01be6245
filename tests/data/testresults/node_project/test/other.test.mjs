import { test } from 'node:test';
test('adds', () => {});
test('async rejects', async () => { await Promise.reject(new Error('nope')); });
