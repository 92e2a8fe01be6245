const test = require('node:test');
test('never', () => {}
