// SPDX-License-Identifier: GPL-2.0-or-later
// Validate a speedscope JSON file against speedscope's published schema.
// usage: node validate-speedscope.js NODE_MODULES FILE
const fs = require('fs');
const path = require('path');
const modules = path.resolve(process.argv[2]), file = process.argv[3];
const Ajv = require(path.join(modules, 'ajv'));
const schema = JSON.parse(fs.readFileSync(
    path.join(modules, 'speedscope/dist/release/file-format-schema.json'), 'utf8'));
const ajv = new Ajv({allErrors: true, strict: false});
const validate = ajv.compile(schema);
const data = JSON.parse(fs.readFileSync(file, 'utf8'));
if (!validate(data)) {
    console.log(JSON.stringify(validate.errors.slice(0, 5), null, 1));
    process.exit(1);
}
console.log('valid');
