// SPDX-License-Identifier: GPL-2.0-or-later
// Import a profile into the real speedscope (the npm package's release
// build) in headless chromium, the way speedscope's own command line does
// (a script calling speedscope.loadFileFromBase64, named by the URL's
// #localProfilePath=), switch to the Sandwich view and print its table, one
// row per function: "total<TAB>self<TAB>name", values as speedscope shows
// them ("1,553" for counts, "323.23ms" for nanoseconds).  Chromium is
// driven over --remote-debugging-pipe (the DevTools protocol, NUL-framed
// JSON on fds 3 and 4), so the script waits for the table itself rather
// than for a guessed delay.  Exit 1 if speedscope showed no table or
// reported an error.
//
// usage: node speedscope-sandwich.js NODE_MODULES PROFILE WORKDIR
'use strict';
const fs = require('fs');
const path = require('path');
const cp = require('child_process');

const [modules, profile, work] = process.argv.slice(2);
if (!work) {
	console.error('usage: speedscope-sandwich.js NODE_MODULES PROFILE WORKDIR');
	process.exit(2);
}
const index = path.join(modules, 'speedscope', 'dist', 'release', 'index.html');
const loader = path.join(work, 'speedscope-load.js');
const b64 = fs.readFileSync(profile).toString('base64');
fs.writeFileSync(loader, `speedscope.loadFileFromBase64(${JSON.stringify(path.basename(profile))}, ` +
	`${JSON.stringify(b64)});\n`);
const url = 'file://' + index + '#localProfilePath=' + loader;

const log = fs.openSync(path.join(work, 'speedscope-chromium.log'), 'w');
const chrome = cp.spawn('chromium', ['--headless', '--no-sandbox', '--disable-gpu',
	'--no-first-run', '--disable-background-networking', '--disable-component-update',
	'--disable-sync', '--remote-debugging-pipe', '--window-size=1600,8000',
	'--user-data-dir=' + path.join(work, 'chromium-speedscope'), 'about:blank'],
	{ stdio: ['ignore', log, log, 'pipe', 'pipe'] });
const give_up = setTimeout(() => fail('no answer from chromium within 90 s'), 90000);

function fail(why) {
	console.error(why);
	chrome.kill('SIGKILL');
	process.exit(1);
}

let next_id = 1, inbuf = '';
const waiting = new Map(), errors = [];
function send(method, params, sessionId) {
	const id = next_id++;
	chrome.stdio[3].write(JSON.stringify({ id, method, params: params || {}, sessionId }) + '\0');
	return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
}
chrome.stdio[4].on('data', d => {
	inbuf += d.toString();
	let nul;
	while ((nul = inbuf.indexOf('\0')) >= 0) {
		const msg = JSON.parse(inbuf.slice(0, nul));
		inbuf = inbuf.slice(nul + 1);
		if (msg.id && waiting.has(msg.id)) {
			const w = waiting.get(msg.id);
			waiting.delete(msg.id);
			if (msg.error)
				w.reject(new Error(JSON.stringify(msg.error)));
			else
				w.resolve(msg.result);
		} else if (msg.method === 'Runtime.exceptionThrown') {
			errors.push(msg.params.exceptionDetails.exception ?
				msg.params.exceptionDetails.exception.description :
				msg.params.exceptionDetails.text);
		} else if (msg.method === 'Runtime.consoleAPICalled' && msg.params.type === 'error') {
			errors.push(msg.params.args.map(a => a.value || a.description).join(' '));
		} else if (msg.method === 'Page.javascriptDialogOpening') {
			errors.push('dialog: ' + msg.params.message);
		}
	}
});

// In the page: wait for the import (the toolbar's "Sandwich" tab), click
// it, wait for the table's rows, return them.
const in_page = `new Promise((resolve, reject) => {
	const started = Date.now();
	const timer = setInterval(() => {
		const rows = document.querySelectorAll('tr');
		if (rows.length > 1) {
			clearInterval(timer);
			return resolve(Array.from(rows).slice(1).map(tr =>
				Array.from(tr.querySelectorAll('td')).map(td => td.textContent)));
		}
		for (const d of document.querySelectorAll('div'))
			if (d.children.length === 1 && d.textContent.endsWith('Sandwich'))
				d.click();
		if (Date.now() - started > 60000) {
			clearInterval(timer);
			reject(new Error('no sandwich table after 60 s; title: ' + document.title));
		}
	}, 100);
})`;

(async () => {
	const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
	const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
	await send('Runtime.enable', {}, sessionId);
	await send('Page.enable', {}, sessionId);
	await send('Page.navigate', { url }, sessionId);
	const r = await send('Runtime.evaluate', { expression: in_page, awaitPromise: true,
		returnByValue: true }, sessionId);
	if (r.exceptionDetails)
		fail('speedscope: ' + (r.exceptionDetails.exception ?
			r.exceptionDetails.exception.description : r.exceptionDetails.text));
	for (const cells of r.result.value) {
		// "1,553 (87%)" "480 (27%)" "name"
		const value = c => c.replace(/ \([^)]*\)$/, '');
		if (cells.length === 3)
			console.log(`${value(cells[0])}\t${value(cells[1])}\t${cells[2]}`);
	}
	if (errors.length)
		fail('errors in the page:\n' + errors.join('\n'));
	clearTimeout(give_up);
	await send('Browser.close').catch(() => {});
	chrome.kill('SIGKILL');
	process.exit(0);
})().catch(e => fail(e.message));
