// SPDX-License-Identifier: GPL-2.0-or-later
// The data a tracerd html page embeds, read the way a browser reads it,
// decoded, one fact per line for the tests to compare (fields separated by
// tabs, strings and lists as JSON):
//   mode    MODE
//   thread  INDEX NAME TID
//   nowaits                      (the page has no waits view)
//   waits   SITES WAIT_NS GRAPH_TOTAL_NS
//   site    INDEX KIND OBJECT WHAT LEAF_NAME ROOT_NAME GRAPH_NS WAIT_NS COUNT
//           STACK OWNERS
// GRAPH_NS is what the waits flame graph weighs at the site's leaf (every
// thread's self weights added up), ROOT_NAME the node under "all waits" it
// hangs from, STACK the function names from the leaf's parent up to that
// node (innermost first), OWNERS [[name, tid, wait_ns, [stack innermost
// first]], ...] with stacks read from the samples' graph.
// Exits 1 (and says why) when the data cannot be read as a browser would.
// usage: node html-data.js PAGE
'use strict';
const fs = require('fs');
const page = fs.readFileSync(process.argv[2], 'utf8');
const fail = (why) => { console.log('bad\t' + why); process.exit(1); };

// The script element's text: the HTML tokenizer ends it at the first
// "</script" (any case).  "<!--" or "<script" inside would switch it to the
// escaped states, where that is no longer true: none may appear.
const open = '<script type="application/json" id="data">';
const at = page.indexOf(open);
if (at < 0)
    fail('no data element');
const from = at + open.length, end = page.toLowerCase().indexOf('</script', from);
if (end < 0)
    fail('the data element never ends');
const text = page.slice(from, end);
if (/<!--|<script/i.test(text))
    fail('the data holds "<!--" or "<script"');
let D;
try {
    D = JSON.parse(text);
} catch (e) {
    fail('the data is not JSON up to the first </script: ' + e.message);
}
const J = JSON.stringify;

function bytes(s) {
    return Buffer.from(s, 'base64');
}
function varints(u, put) {
    let x = 0, sh = 1, k = 0;
    for (const c of u) {
        x += (c & 127) * sh;
        if (c & 128)
            sh *= 128;
        else {
            put(k++, x);
            x = 0;
            sh = 1;
        }
    }
}
// A graph as the page decodes it: per preorder node its function and
// parent; the self weights of every thread added up.
function graph(t, selfs) {
    const n = t.n, F = new Int32Array(n), Z = new Int32Array(n), P = new Int32Array(n);
    const self = new Float64Array(n);
    Z[0] = n;
    varints(bytes(t.tree), (k, x) => {
        if (k & 1)
            Z[(k >> 1) + 1] = x;
        else
            F[(k >> 1) + 1] = x;
    });
    const st = [0];
    for (let i = 1; i < n; i++) {
        while (i >= st[st.length - 1] + Z[st[st.length - 1]])
            st.pop();
        P[i] = st[st.length - 1];
        st.push(i);
    }
    for (const s of selfs) {
        let idx = 0;
        varints(bytes(s), (k, x) => {
            if (k & 1)
                self[idx] += x;
            else
                idx += x;
        });
    }
    return { n, F, P, self };
}

const W = D.waits;
const S = W ? D.strings.concat(W.strings) : D.strings;
const FN = W ? D.funcs.concat(W.funcs) : D.funcs;
const name = (g, k) => S[FN[g.F[k]][0]];
const main = graph(D, D.threads.map((t) => t.self));

console.log('mode\t' + J(D.mode));
D.threads.forEach((t, i) => console.log(['thread', i, J(t.name), t.tid].join('\t')));
if (!W) {
    console.log('nowaits');
    process.exit(0);
}
if (W.self.length !== D.threads.length)
    fail('the waits graph has self weights for ' + W.self.length + ' threads of ' +
         D.threads.length);
const g = graph(W, W.self);
console.log(['waits', W.sites.length, W.wait_ns, g.self.reduce((a, b) => a + b, 0)].join('\t'));
W.sites.forEach((s, i) => {
    const stack = [];
    let k = g.P[s.leaf];
    for (; k && g.P[k]; k = g.P[k])
        stack.push(name(g, k));
    const owners = s.owners.map((o) => {
        const os = [];
        for (let j = o.stack; j; j = main.P[j])
            os.push(name(main, j));
        return [D.threads[o.thread].name, D.threads[o.thread].tid, o.wait_ns, os];
    });
    console.log(['site', i, J(s.kind), J(s.object), J(s.what), J(name(g, s.leaf)),
                 J(k ? name(g, k) : ''), g.self[s.leaf], s.wait_ns, s.count, J(stack),
                 J(owners)].join('\t'));
});
