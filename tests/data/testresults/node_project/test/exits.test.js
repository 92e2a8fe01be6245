const test = require('node:test');
test('before exit', () => {});
process.exit(3);
