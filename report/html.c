/* SPDX-License-Identifier: GPL-2.0-or-later */
/* html output: one self-contained file (no network, no CDN) with an
 * interactive flame graph: click a frame to zoom, reset, search with
 * highlight and matched percentage, hover for the full name, file:line,
 * module and percentages, a thread filter, and the time range of the data.
 * A recording with wait episodes (wall mode) adds a second view: a flame
 * graph of wait time and the table of who held what, the sites of
 * rp_wait_sites_build() as --format waits prints them.
 *
 * The page embeds the call tree merged by function in preorder, so that a
 * node's subtree is the run of nodes that follows it: per node its
 * function (an index into a table of name, module, file, line, and a
 * fifth entry for a kernel frame: 1, or 2 for the scheduler's) and its
 * subtree size, as base64'd varints; each thread's self counts as pairs
 * (preorder index delta, count).  Millions of nodes then cost a few bytes
 * each and decode into typed arrays; totals for the selected threads are
 * one backward pass, a search tests each distinct name once and sums the
 * topmost matches in one forward pass that skips matched subtrees, and only
 * frames at least half a pixel wide are drawn (their children sorted by
 * total when drawn), so 100k unique stacks stay fast.  The waits graph is
 * embedded the same way (weights in nanoseconds), beside the sites.  The
 * body's data-drawn-ms says when the first drawing ended (for the
 * benchmark).  Every string from the recording (names, files, threads,
 * what a wait was for) is embedded as JSON with <, > and & escaped, so none
 * can end the script, and the page puts them into the document only as
 * text (textContent, never as markup).  The URL hash
 * #view=waits&zoom=NAME&search=TEXT&thread=NAME applies the same actions
 * as clicks and typing (used by the tests, useful for links). */
#define _GNU_SOURCE
#include "report-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"

static const char page_head[] =
	"<!doctype html>\n<html><head><meta charset=\"utf-8\">\n"
	"<title>tracerd flame graph</title>\n<style>\n"
	"body{font:12px sans-serif;margin:0}\n"
	"#bar{padding:6px;background:#eee;border-bottom:1px solid #ccc}\n"
	"#bar *{margin-right:8px}\n"
	"#graph{position:relative;margin:4px}\n"
	".f{position:absolute;height:17px;line-height:14px;overflow:hidden;white-space:nowrap;"
	"box-sizing:border-box;border:1px solid #fff;padding-left:2px;cursor:pointer;"
	"background:#e8a46a}\n"
	".f.k-l{background:#e6cf6e}.f.k-u{background:#e09a9a}.f.k-x{background:#c8c8c8}"
	".f.k-k{background:#9cc9b0}\n"
	".f.w{background:#7fa8d8}\n"
	".f.m{background:#c56cf0}\n"
	"#bar i{font-style:normal;padding:0 4px;margin-right:2px}\n"
	"#tip{position:fixed;display:none;background:#ffe;border:1px solid #888;padding:4px;"
	"max-width:700px;word-break:break-all;pointer-events:none}\n"
	"#waits{margin:4px}#waits table{border-collapse:collapse}\n"
	"#waits th,#waits td{border-bottom:1px solid #ddd;padding:2px 6px;text-align:left;"
	"vertical-align:top}\n"
	"#waits td.n{text-align:right;white-space:nowrap}#waits ol{margin:2px 0;font-family:monospace}\n"
	"</style></head><body>\n"
	"<div id=\"bar\"><b>tracerd</b><select id=\"view\" hidden></select><span id=\"nowaits\"></span>"
	"<span id=\"range\"></span>"
	"thread <select id=\"thread\"></select>"
	"<input id=\"search\" placeholder=\"search (regex)\" size=\"30\">"
	"<span id=\"match\"></span><button id=\"reset\">reset zoom</button>"
	"<span><i style=\"background:#e8a46a\">program</i>"
	"<i style=\"background:#e6cf6e\">C/C++ runtime</i>"
	"<i style=\"background:#e09a9a\">no symbol</i>"
	"<i style=\"background:#9cc9b0\">kernel</i>"
	"<i style=\"background:#c8c8c8\">tracerd's notes</i></span></div>\n"
	"<div id=\"graph\"></div><div id=\"waits\"></div><div id=\"tip\"></div>\n"
	"<script type=\"application/json\" id=\"data\">";

static const char page_script[] =
	"</script>\n<script>\n"
	"'use strict';\n"
	"const D=JSON.parse(document.getElementById('data').textContent),WD=D.waits;\n"
	"function bytes(s){const b=atob(s),u=new Uint8Array(b.length);"
	"for(let i=0;i<b.length;i++)u[i]=b.charCodeAt(i);return u;}\n"
	"function varints(u,put){let x=0,sh=1,k=0;for(let i=0;i<u.length;i++){const c=u[i];"
	"x+=(c&127)*sh;if(c&128)sh*=128;else{put(k++,x);x=0;sh=1;}}}\n"
	"const S=WD?D.strings.concat(WD.strings):D.strings,FN=WD?D.funcs.concat(WD.funcs)"
	":D.funcs;\n"
	"function decode(t,selfs){const n=t.n,F=new Int32Array(n),Z=new Int32Array(n),"
	"P=new Int32Array(n);\n"
	"Z[0]=n;varints(bytes(t.tree),(k,x)=>{if(k&1)Z[(k>>1)+1]=x;else F[(k>>1)+1]=x;});\n"
	"const st=new Int32Array(n);let sp=0;for(let i=1;i<n;i++){while(i>=st[sp]+Z[st[sp]])"
	"sp--;P[i]=st[sp];st[++sp]=i;}\n"
	"const TS=selfs.map(s=>{const r=[];let at=0;varints(bytes(s),(k,x)=>{if(k&1)r.push(x);"
	"else r.push(at+=x);});return r;});\n"
	"return {n,F,Z,P,TS};}\n"
	"const T=[decode(D,D.threads.map(t=>t.self))];if(WD)T.push(decode(WD,WD.self));\n"
	"let view=0,n,F,Z,P,TS,self,total,root=0,re=null;\n"
	"const hit=new Uint8Array(FN.length);\n"
	"const $=id=>document.getElementById(id),graph=$('graph'),tip=$('tip');\n"
	"const nm=k=>k?S[FN[F[k]][0]]:view?'all waits':'all';\n"
	/* a frame's kind, for its colour: the program and its libraries (k-p),
	 * the C and C++ runtime and the vDSO (k-l), a function no symbol names
	 * ([unknown], MODULE+0xSTART: k-u), tracerd's own note ([stack cut:
	 * ...], [runnable: ...]: k-x), or the kernel's (k-k: its funcs entry
	 * has a fifth element) */
	"const KIND=FN.map(fn=>{const n=S[fn[0]],m=(fn[1]?S[fn[1]]:'').replace(/.*\\//,'');"
	"return fn[4]?'k-k':n==='[unknown]'||/\\+0x[0-9a-f]+$/.test(n)?'k-u':n[0]==='['?'k-x':"
	"/^(libc|libm|libpthread|libdl|librt|libresolv|libstdc\\+\\+|libgcc_s|libc\\+\\+|"
	"libc\\+\\+abi|libunwind)\\.so|^ld-linux|^\\[vdso\\]$|^linux-vdso/.test(m)?'k-l':'k-p';});\n"
	"function use(v){view=v;({n,F,Z,P,TS}=T[v]);self=new Float64Array(n);"
	"total=new Float64Array(n);root=0;}\n"
	"function load(sel){self.fill(0);for(const t of sel){const r=TS[t];"
	"for(let i=0;i<r.length;i+=2)self[r[i]]+=r[i+1];}"
	"total.set(self);for(let i=n-1;i>0;i--)total[P[i]]+=total[i];}\n"
	"function setSearch(s){try{re=s?new RegExp(s):null;}catch(x){re=null;}"
	"for(let f=0;f<FN.length;f++)hit[f]=re&&re.test(S[FN[f][0]])?1:0;}\n"
	"function matches(k){return re&&k&&hit[F[k]];}\n"
	"function kids(k){const r=[];for(let c=k+1,e=k+Z[k];c<e;c+=Z[c])if(total[c])r.push(c);"
	"return r.sort((a,b)=>total[b]-total[a]||(nm(a)<nm(b)?-1:1));}\n"
	"function render(){graph.textContent='';const W=graph.clientWidth||1200,"
	"f=document.createDocumentFragment();let depth=0,maxd=0;"
	"const anc=[];for(let a=root;a;a=P[a])anc.unshift(a);anc.unshift(0);"
	"for(let i=0;i<anc.length-1;i++)bar(anc[i],0,W,depth++,f);"
	"(function walk(k,x,w,d){bar(k,x,w,d,f);maxd=Math.max(maxd,d);if(!total[k])return;"
	"let cx=x;for(const c of kids(k)){const cw=w*total[c]/total[k];"
	"if(cw<0.5)break;walk(c,cx,cw,d+1);cx+=cw;}})(root,0,W,depth);"
	"graph.appendChild(f);graph.style.height=((maxd+1)*18+4)+'px';"
	"if(re){let m=0;for(let i=1;i<n;)if(total[i]&&hit[F[i]]){m+=total[i];i+=Z[i];}else i++;"
	"$('match').textContent='matched '+(total[0]?(100*m/total[0]).toFixed(2):'0.00')+'%';}"
	"else $('match').textContent='';}\n"
	"function bar(k,x,w,d,f){const e=document.createElement('div');e.className='f'+"
	"(k?' '+KIND[F[k]]:'')+(view?' w':'')+(matches(k)?' m':'');e.style.left=x+'px';e.style.top=(d*18)+'px';"
	"e.style.width=w+'px';e.textContent=w>30?nm(k):'';e.dataset.n=k;f.appendChild(e);}\n"
	"function pct(v){return total[0]?(100*v/total[0]).toFixed(2)+'%':'0%';}\n"
	"function zoomTo(k){root=k;render();}\n"
	"function find(name){let best=0;for(let i=1;i<n;i++)"
	"if(total[i]>(best?total[best]:0)&&nm(i)===name)best=i;return best;}\n"
	"graph.addEventListener('click',e=>{const k=e.target.dataset.n;"
	"if(k!==undefined)zoomTo(+k);});\n"
	"$('reset').addEventListener('click',()=>zoomTo(0));\n"
	"$('search').addEventListener('input',e=>{setSearch(e.target.value);render();});\n"
	"const secs=ns=>ns>=0.9995e9?(ns/1e9).toFixed(3)+' s':(ns/1e6).toFixed(1)+' ms';\n"
	"const tn=i=>D.threads[i].name+' ('+D.threads[i].tid+')';\n"
	"const SITE=new Map();if(WD)WD.sites.forEach(s=>SITE.set(s.leaf,s));\n"
	"function held(s){return s.owners.map(o=>tn(o.thread)+' '+"
	"(s.wait_ns?(100*o.wait_ns/s.wait_ns).toFixed(0):0)+'%').join(', ');}\n"
	"graph.addEventListener('mousemove',e=>{const a=e.target.dataset.n;if(a===undefined){"
	"tip.style.display='none';return;}const k=+a,fn=k?FN[F[k]]:null,s=view?SITE.get(k)"
	":null;tip.textContent=nm(k)+(fn&&fn[2]?'  at '+S[fn[2]]+(fn[3]?':'+fn[3]:''):'')+"
	"(fn&&fn[1]?'  in '+S[fn[1]]:'')+'  total '+pct(total[k])+'  self '+pct(self[k])+"
	"(view?' ('+secs(total[k])+' of waiting)':' ('+total[k]+' samples)')+"
	"(s&&s.owners.length?'  held by '+held(s):'');tip.style.display='block';"
	"tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';});\n"
	"graph.addEventListener('mouseleave',()=>tip.style.display='none');\n"
	"const ALL=D.threads.map((t,i)=>i),sel=$('thread');sel.add(new Option('all threads','-1'));"
	"D.threads.forEach((t,i)=>sel.add(new Option(t.name+' ('+t.tid+')',i)));\n"
	"const cur=()=>sel.value<0?ALL:[+sel.value];\n"
	"function el(tag,text,cls){const e=document.createElement(tag);if(text!==undefined)"
	"e.textContent=text;if(cls)e.className=cls;return e;}\n"
	"function frames(t,k,last){const r=[];for(;k&&k!==last;k=t.P[k])r.push(k);return r;}\n"
	"function stackOf(t,ks,summary,none){const d=el('details'),o=el('ol');"
	"d.appendChild(el('summary',summary));if(!ks.length)o.appendChild(el('li',none||'[no "
	"stack]'));for(const k of ks)o.appendChild(el('li',S[FN[t.F[k]][0]]));d.appendChild(o)"
	";return d;}\n"
	/* where a wait began, in one line: its innermost user frames (the
	 * first outside the leaf's module, then the last in it), and its
	 * kernel frames folded to one mark naming the first that is not the
	 * scheduler's, as rp_stack_line() prints them */
	"function waitingIn(t,ks){if(!ks.length)return '[no stack]';"
	"const kf=k=>FN[t.F[k]][4]|0;let j=0;while(j<ks.length&&kf(ks[j]))j++;"
	"if(j===ks.length)j=0;const us=ks.slice(j);\n"
	"const mod=k=>FN[t.F[k]][1];let i=0;while(i+1<us.length&&mod(us[i+1])===mod(us[0]))i++"
	";const name=k=>S[FN[t.F[k]][0]];let r=i+1<us.length?name(us[i+1])+' \\u2192 '+"
	"name(us[i]):name(us[i]);\n"
	"if(j){let m=0;while(m<j&&kf(ks[m])===2)m++;if(m===j)m=0;r+=' [kernel: '+name(ks[m])+"
	"(j>1?' ...':'')+']';}return r;}\n"
	"function table(){const w=$('waits');w.textContent='';if(view!==1)return;\n"
	"const u=T[1],rows=WD.sites.filter(s=>total[s.leaf]>0),MAX=200;\n"
	"w.appendChild(el('p',(sel.value<0?'':'Sites where '+tn(+sel.value)+' waited. ')+'Who "
	"held what: each wait site (what was waited for, where the wait began), longest total "
	"first; its figures count every waiter.'));\n"
	"const tb=el('table'),hr=el('tr');\n"
	"for(const h of ['total','episodes','p50','p99','max','kind','object','what','waiting "
	"in','waiters','held by (time held, their stack)'])hr.appendChild(el('th',h));\n"
	"tb.appendChild(hr);\n"
	"for(const s of rows.slice(0,MAX)){const tr=el('tr'),ks=frames(u,u.P[s.leaf],0)"
	".filter(k=>u.P[k]);\n"
	"for(const v of [secs(s.wait_ns),s.count,secs(s.p50_ns),secs(s.p99_ns),secs(s.max_ns)"
	"])tr.appendChild(el('td',String(v),'n'));\n"
	"tr.appendChild(el('td',s.kind));tr.appendChild(el('td',s.object));"
	"tr.appendChild(el('td',s.what));\n"
	"const wi=el('td');wi.appendChild(stackOf(u,ks,waitingIn(u,ks)));tr.appendChild(wi);\n"
	"tr.appendChild(el('td',s.threads.map(tn).join(', ')+(s.more_threads?' and more':'')));\n"
	"const ho=el('td');if(!s.owners.length&&/^(mutex|rwlock|join)$/.test(s.kind))"
	"ho.textContent='none known';\n"
	"for(const o of s.owners.slice(0,10))ho.appendChild(stackOf(T[0],frames(T[0],o.stack,"
	"0),tn(o.thread)+': '+secs(o.wait_ns)+' ('+(s.wait_ns?(100*o.wait_ns/s.wait_ns)"
	".toFixed(0):0)+'%)'+(o.held===false?', no stack taken while it held it':''),"
	"o.held===false?'[no stack taken while it held it]':undefined));\n"
	"if(s.owners.length>10)ho.appendChild(el('div','and '+(s.owners.length-10)+' more'));\n"
	"tr.appendChild(ho);tb.appendChild(tr);}\n"
	"w.appendChild(tb);\n"
	"if(rows.length>MAX)w.appendChild(el('p',(rows.length-MAX)+' more sites: tracerd "
	"report -f waits --limit 0 lists them all'));}\n"
	"function range(){if(view){$('range').textContent=WD.episodes+' wait episodes, '+"
	"secs(WD.wait_ns)+' of waiting at tick resolution ('+(WD.tick_ns/1e6).toFixed(1)+' "
	"ms), mode '+D.mode;$('range').title='a flame graph of wait time: the kind of wait, "
	"the stack where it began, what was waited for';}\n"
	"else{$('range').textContent=D.first+' .. '+D.last+', '+D.samples+' samples, mode '+"
	"D.mode;$('range').title=D.meaning;}}\n"
	"function show(v){use(v);load(cur());range();render();table();}\n"
	"sel.addEventListener('change',()=>{load(cur());root=0;render();table();});\n"
	"const vs=$('view');\n"
	"if(WD){vs.hidden=false;vs.add(new Option('samples','0'));vs.add(new Option('wait "
	"time','1'));vs.addEventListener('change',()=>show(+vs.value));}\n"
	"else{if(/wall/.test(D.mode))$('nowaits').textContent='no waits recorded';}\n"
	"const h=new URLSearchParams(location.hash.slice(1));\n"
	"use(WD&&h.get('view')==='waits'?1:0);vs.value=String(view);\n"
	"if(h.get('thread')!==null){const i=D.threads.findIndex(t=>t.name===h.get('thread'));"
	"if(i>=0)sel.value=i;}\n"
	"load(cur());range();\n"
	"if(h.get('search')){$('search').value=h.get('search');setSearch(h.get('search'));}\n"
	"root=h.get('zoom')?find(h.get('zoom')):0;\n"
	"render();table();\n"
	"document.body.dataset.drawnMs=Math.round(performance.now());\n"
	"window.addEventListener('resize',render);\n"
	"</script></body></html>\n";

/* The varints of a td_buf, written out as base64. */
static void put_base64(FILE *out, const struct td_buf *v)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	fputc('"', out);
	for (size_t i = 0; i < v->len; i += 3) {
		uint32_t w = (uint32_t)v->p[i] << 16;
		size_t left = v->len - i;

		if (left > 1)
			w |= (uint32_t)v->p[i + 1] << 8;
		if (left > 2)
			w |= v->p[i + 2];
		fputc(a[w >> 18], out);
		fputc(a[(w >> 12) & 63], out);
		fputc(left > 1 ? a[(w >> 6) & 63] : '=', out);
		fputc(left > 2 ? a[w & 63] : '=', out);
	}
	fputc('"', out);
}

/* Order (preorder index, count) pairs by index. */
static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* The preorder of a tree whose parents precede their children (linked by
 * rp_link_tree; nodes NULL: the root alone): pre[node] is its index,
 * order[index] the node, size[node] its subtree's nodes.  stack has room
 * for n (depth is unbounded in principle: no recursion). */
static void tree_order(const struct rp_node *nodes, size_t n, uint32_t *pre, uint32_t *order,
	uint32_t *size, uint32_t *stack)
{
	size_t k = 0, sp = 0;

	for (size_t i = 0; i < n; i++)
		size[i] = 1;
	for (size_t i = n; i-- > 1;)
		size[nodes[i].parent] += size[i];
	stack[sp++] = 0;
	while (sp) {
		uint32_t v = stack[--sp];

		pre[v] = (uint32_t)k;
		order[k++] = v;
		if (nodes)
			for (uint32_t c = nodes[v].first_child; c; c = nodes[c].next_sibling)
				stack[sp++] = c;
	}
}

/* Where a graph's self weights come from: (thread, preorder index,
 * weight) rows, one per call from *cursor = 0 until it returns false.
 * Read twice. */
struct self_source {
	bool (*next)(const void *arg, size_t *cursor, uint32_t *thread, uint64_t *index,
		uint64_t *weight);
	const void *arg;
};

/* Those rows as (index, weight) pairs grouped by thread: thread t's are
 * pairs[2 * start[t] .. 2 * start[t + 1]).  owns: pairs, start. */
struct self_lists {
	uint64_t *pairs;
	size_t *start;
};

static void self_lists_free(struct self_lists *L)
{
	free(L->pairs);
	free(L->start);
}

/* Bucket the rows by thread (rows of no known thread are dropped). */
static int self_lists_build(size_t nthreads, const struct self_source *src, struct self_lists *ret)
{
	struct self_lists L = { .start = calloc(nthreads + 1, sizeof(*L.start)) };
	size_t *fill = calloc(nthreads + 1, sizeof(*fill));
	uint64_t index, weight;
	uint32_t t;

	if (!L.start || !fill)
		goto out_free;
	for (size_t cur = 0; src->next(src->arg, &cur, &t, &index, &weight);)
		if (t < nthreads)
			L.start[t + 1]++;
	for (size_t i = 0; i < nthreads; i++)
		L.start[i + 1] += L.start[i];
	L.pairs = calloc(L.start[nthreads] + 1, 2 * sizeof(*L.pairs));
	if (!L.pairs)
		goto out_free;
	for (size_t cur = 0; src->next(src->arg, &cur, &t, &index, &weight);) {
		size_t at;

		if (t >= nthreads)
			continue;
		at = L.start[t] + fill[t]++;
		L.pairs[2 * at] = index;
		L.pairs[2 * at + 1] = weight;
	}
	free(fill);
	*ret = L;
	return 0;
out_free:
	free(fill);
	self_lists_free(&L);
	return -ENOMEM;
}

/* Thread t's self weights in preorder, as base64'd varint pairs (index
 * delta, weight). */
static int put_self(FILE *out, const struct self_lists *L, size_t t)
{
	struct td_buf v = { 0 };
	uint64_t last = 0, *pairs = L->pairs + 2 * L->start[t];
	size_t n = L->start[t + 1] - L->start[t];

	rp_sort(pairs, n, 2 * sizeof(*pairs), u64_cmp);
	for (size_t i = 0; i < n; i++) {
		td_buf_put_varint(&v, pairs[2 * i] - last);
		td_buf_put_varint(&v, pairs[2 * i + 1]);
		last = pairs[2 * i];
	}
	if (v.failed) {
		td_buf_free(&v);
		return -ENOMEM;
	}
	put_base64(out, &v);
	td_buf_free(&v);
	return 0;
}

/* The samples: the profile's (thread, state, node) counts, at the
 * function-level node's preorder index. */
struct sample_rows {
	const struct rp_profile *p;
	const uint32_t *pre;
};

static bool sample_rows_next(const void *arg, size_t *cursor, uint32_t *thread, uint64_t *index,
	uint64_t *weight)
{
	const struct sample_rows *a = arg;
	uint64_t key;

	if (!td_map_next(&a->p->thread_node, cursor, &key, weight))
		return false;
	*thread = RP_TN_THREAD(key);
	*index = a->pre[a->p->fnode_of[RP_TN_NODE(key)]];
	return true;
}

/* ---- the waits view */

/* The waits flame graph: all waits, the kind of wait, the stack where it
 * began (root first, merged by function like the samples' graph), and a
 * leaf per site ("mutex 0x55d0...", "fd 3 (pipe:[1234])") that weighs
 * its wait time: someone chasing a latency spike asks first what kind of
 * waiting the time went to, then where, then on what.  Kind and site
 * nodes are functions of their own, named by extra strings that the page
 * appends to its strings and funcs tables.
 * owns: nodes, names (and each name), leaf, path, index. */
struct wtree {
	struct rp_node *nodes; /* .frame: an index into the page's funcs */
	size_t n, cap;
	char **names; /* the extra strings; name j is func nfuncs + j */
	size_t nnames, capnames, nfuncs;
	uint32_t *leaf;		/* site -> its leaf */
	uint32_t *path;		/* scratch: function-level nodes of a stack */
	size_t cappath;
	struct td_map index; /* function-level node << 32 | kind -> node */
};

static void wtree_free(struct wtree *T)
{
	for (size_t j = 0; j < T->nnames; j++)
		free(T->names[j]);
	free(T->names);
	free(T->nodes);
	free(T->leaf);
	free(T->path);
	td_map_free(&T->index);
}

/* A node under parent for func: its index, or -ENOMEM. */
static long wtree_add(struct wtree *T, uint32_t parent, uint32_t func)
{
	if (td_array_grow(T->nodes, T->cap, T->n + 1, 256) < 0)
		return -ENOMEM;
	T->nodes[T->n] = (struct rp_node){ .parent = parent, .frame = func };
	return (long)T->n++;
}

/* A func named name (taken, freed here on failure): its index, or -ENOMEM. */
static long wtree_name(struct wtree *T, char *name)
{
	if (!name || td_array_grow(T->names, T->capnames, T->nnames + 1, 32) < 0) {
		free(name);
		return -ENOMEM;
	}
	T->names[T->nnames++] = name;
	return (long)(T->nfuncs + T->nnames - 1);
}

/* The node of function-level node f under kind, made with the ancestors it
 * lacks: its index, or -ENOMEM. */
static long wtree_node(struct wtree *T, const struct rp_profile *p, const uint32_t *fidx,
	uint32_t kind, uint32_t f)
{
	uint64_t v = 0;
	size_t d = 0;

	/* up to the nearest node already made (at worst the root of all) */
	while (!td_map_get(&T->index, (uint64_t)f << 32 | kind, &v)) {
		if (td_array_grow(T->path, T->cappath, d + 1, 64) < 0)
			return -ENOMEM;
		T->path[d++] = f;
		if (!f) {
			v = 0;
			break;
		}
		f = p->fnodes[f].parent;
	}
	while (d--) {
		uint32_t g = T->path[d];
		long func = g ? (long)fidx[p->fnodes[g].frame] :
				wtree_name(T, strdup(tcf_wait_kind_name(kind)));
		long k = func < 0 ? func : wtree_add(T, (uint32_t)v, (uint32_t)func);

		if (k < 0 || td_map_set(&T->index, (uint64_t)g << 32 | kind, (uint64_t)k) < 0)
			return -ENOMEM;
		v = (uint64_t)k;
	}
	return (long)v;
}

static int wtree_build(struct wtree *T, const struct rp_profile *p, const struct rp_wait_sites *S,
	const uint32_t *fidx)
{
	T->leaf = calloc(S->n + 1, sizeof(*T->leaf));
	if (!T->leaf || wtree_add(T, 0, 0) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < S->n; i++) {
		const struct rp_wait_site *x = &S->s[i];
		const char *what = rp_str(p, x->what);
		/* tcf_wait_kind_name() calls an unknown kind other: so does the graph */
		uint32_t kind = x->kind <= TCF_WAIT_MAX ? x->kind : TCF_WAIT_OTHER;
		uint32_t f = p->fnode_of && x->node < p->nnodes ? p->fnode_of[x->node] : 0;
		long parent = wtree_node(T, p, fidx, kind, f), func, leaf;
		char obj[64], *label;

		rp_wait_object_text(obj, sizeof(obj), x->kind, x->object);
		if (asprintf(&label, "%s%s%s%s%s%s", tcf_wait_kind_name(x->kind), obj[0] ? " " : "", obj,
			    what ? " (" : "", what ? what : "", what ? ")" : "") < 0)
			label = NULL;
		if (parent < 0) {
			free(label);
			return -ENOMEM;
		}
		func = wtree_name(T, label);
		leaf = func < 0 ? func : wtree_add(T, (uint32_t)parent, (uint32_t)func);
		if (leaf < 0)
			return -ENOMEM;
		T->leaf[i] = (uint32_t)leaf;
	}
	rp_link_tree(T->nodes, T->n);
	return 0;
}

/* The episodes' wait time, each at its site's leaf. */
struct wait_rows {
	const struct rp_profile *p;
	const struct rp_wait_sites *S;
	const uint32_t *leaf, *pre;
};

static bool wait_rows_next(const void *arg, size_t *cursor, uint32_t *thread, uint64_t *index,
	uint64_t *weight)
{
	const struct wait_rows *a = arg;
	const struct rp_wait *w;

	if (*cursor >= a->p->nwaits)
		return false;
	w = &a->p->waits[*cursor];
	*thread = w->thread;
	*index = a->pre[a->leaf[a->S->site_of[*cursor]]];
	*weight = w->wait_ns;
	++*cursor;
	return true;
}

/* ,"waits":{...}: the waits graph (strings and funcs to append, the tree
 * and each thread's self weights as the samples' graph has them) and the
 * sites as rp_waits() prints them, with each one's leaf in the graph; their
 * waiters and owners are indices into threads, an owner's stack a preorder
 * index into the samples' graph (pre).  Nothing when there are no waits. */
static int put_waits(FILE *out, const struct rp_profile *p, const uint32_t *pre,
	const uint32_t *fidx, size_t nfuncs)
{
	struct rp_wait_sites S = { 0 };
	struct wtree T = { .nfuncs = nfuncs };
	struct self_lists L = { 0 };
	struct td_buf tree = { 0 };
	uint32_t *wpre = NULL, *order = NULL, *size = NULL, *stack = NULL;
	int r;

	if (!p->nwaits)
		return 0;
	if ((r = rp_wait_sites_build(p, &S)) < 0)
		return r;
	r = -ENOMEM;
	if (wtree_build(&T, p, &S, fidx) < 0)
		goto out;
	wpre = calloc(T.n, sizeof(*wpre));
	order = calloc(T.n, sizeof(*order));
	size = calloc(T.n, sizeof(*size));
	stack = calloc(T.n, sizeof(*stack));
	if (!wpre || !order || !size || !stack)
		goto out;
	tree_order(T.nodes, T.n, wpre, order, size, stack);
	for (size_t i = 1; i < T.n; i++) {
		td_buf_put_varint(&tree, T.nodes[order[i]].frame);
		td_buf_put_varint(&tree, size[order[i]]);
	}
	{
		struct wait_rows rows = { p, &S, T.leaf, wpre };
		struct self_source src = { wait_rows_next, &rows };

		if (tree.failed || self_lists_build(p->nthreads, &src, &L) < 0)
			goto out;
	}

	fputs(",\n\"waits\":{\"strings\":[", out);
	for (size_t j = 0; j < T.nnames; j++) {
		if (j)
			fputc(',', out);
		td_json_string(out, T.names[j], TD_JSON_IN_SCRIPT);
	}
	fputs("],\n\"funcs\":[", out);
	for (size_t j = 0; j < T.nnames; j++)
		fprintf(out, "%s[%zu,0,0,0]", j ? "," : "", p->nstrs + j);
	fprintf(out, "],\n\"n\":%zu,\"tree\":", T.n);
	put_base64(out, &tree);
	fputs(",\n\"self\":[", out);
	for (size_t t = 0; t < p->nthreads; t++) {
		if (t)
			fputc(',', out);
		if (put_self(out, &L, t) < 0)
			goto out;
	}
	fprintf(out, "],\n\"tick_ns\":%" PRIu64 ",\"wait_ns\":%" PRIu64 ",\"episodes\":%" PRIu64
		     ",\"sites\":[",
		rp_period_ns(p), S.wait_ns, S.episodes);
	for (size_t i = 0; i < S.n; i++) {
		const struct rp_wait_site *x = &S.s[i];
		char obj[64];

		rp_wait_object_text(obj, sizeof(obj), x->kind, x->object);
		fprintf(out, "%s\n{\"kind\":", i ? "," : "");
		td_json_string(out, tcf_wait_kind_name(x->kind), TD_JSON_IN_SCRIPT);
		fputs(",\"object\":", out);
		td_json_string(out, obj, TD_JSON_IN_SCRIPT);
		fputs(",\"what\":", out);
		td_json_string(out, rp_str(p, x->what), TD_JSON_IN_SCRIPT);
		fprintf(out,
			",\"leaf\":%u,\"wait_ns\":%" PRIu64 ",\"count\":%zu,\"p50_ns\":%" PRIu64
			",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 ",\"threads\":[",
			wpre[T.leaf[i]], x->total_ns, x->n, rp_wait_site_quantile(x, 0.5),
			rp_wait_site_quantile(x, 0.99), x->n ? x->durs[x->n - 1] : 0);
		for (unsigned t = 0; t < x->nthreads; t++)
			fprintf(out, "%s%u", t ? "," : "", x->threads[t]);
		fprintf(out, "],\"more_threads\":%s,\"owners\":[", x->more_threads ? "true" : "false");
		for (size_t o = 0; o < x->nowners; o++) {
			uint32_t node = x->owners[o].node;

			/* held: whether the stack was taken while it held the
			 * object (false: none was; null: not known, before 1.2) */
			fprintf(out,
				"%s{\"thread\":%u,\"wait_ns\":%" PRIu64 ",\"held\":%s,\"stack\":%u}",
				o ? "," : "", x->owners[o].thread, x->owners[o].wait_ns,
				x->owners[o].held == RP_HELD_STACK ? "true" :
				x->owners[o].held == RP_HELD_NONE  ? "false" :
								     "null",
				p->fnode_of && node < p->nnodes ? pre[p->fnode_of[node]] : 0);
		}
		fputs("]}", out);
	}
	fputs("]}", out);
	r = 0;
out:
	rp_wait_sites_free(&S);
	wtree_free(&T);
	self_lists_free(&L);
	td_buf_free(&tree);
	free(wpre);
	free(order);
	free(size);
	free(stack);
	return r;
}

int rp_html(FILE *out, const struct rp_profile *p)
{
	size_t n = p->nfnodes ? p->nfnodes : 1, nfuncs = 1;
	/* fnode -> preorder index; preorder index -> fnode; subtree sizes;
	 * function-level frame -> index in the funcs table + 1 */
	uint32_t *pre = calloc(n, sizeof(*pre)), *order = calloc(n, sizeof(*order));
	uint32_t *size = calloc(n, sizeof(*size)), *stack = calloc(n, sizeof(*stack));
	uint32_t *fidx = calloc(p->nframes + 1, sizeof(*fidx)), *func_node = calloc(n, sizeof(*func_node));
	struct sample_rows rows = { p, pre };
	struct self_source src = { sample_rows_next, &rows };
	struct self_lists L = { 0 };
	struct td_buf tree = { 0 };
	char a[32], b[32];
	int r = -ENOMEM;

	if (!pre || !order || !size || !stack || !fidx || !func_node)
		goto out;
	tree_order(p->nfnodes ? p->fnodes : NULL, n, pre, order, size, stack);
	/* the funcs table: one entry per function-level frame, with the file
	 * and line where it was first seen (its start line when known) */
	for (size_t i = 1; i < n; i++) {
		uint32_t fr = p->fnodes[i].frame;

		if (!fidx[fr]) {
			fidx[fr] = (uint32_t)nfuncs;
			func_node[nfuncs++] = (uint32_t)i;
		}
	}
	for (size_t i = 1; i < n; i++) {
		uint32_t v = order[i];

		td_buf_put_varint(&tree, fidx[p->fnodes[v].frame]);
		td_buf_put_varint(&tree, size[v]);
	}
	/* each thread's self counts in preorder */
	if (tree.failed || self_lists_build(p->nthreads, &src, &L) < 0)
		goto out;

	fputs(page_head, out);
	fputs("{\"strings\":[", out);
	for (size_t i = 0; i < p->nstrs; i++) {
		if (i)
			fputc(',', out);
		td_json_string(out, p->strs[i], TD_JSON_IN_SCRIPT);
	}
	fputs("],\n\"funcs\":[[0,0,0,0]", out);
	for (size_t f = 1; f < nfuncs; f++) {
		uint32_t v = func_node[f];
		const struct rp_frame *fr = &p->frames[p->fnodes[v].frame];
		/* a kernel frame's has a fifth: 1, or 2 for the scheduler's */
		const char *kernel = "";

		if (fr->kernel)
			kernel = rp_kernel_scheduler(rp_str(p, fr->name)) ? ",2" : ",1";
		fprintf(out, ",\n[%u,%u,%u,%u%s]", fr->name, fr->module, p->fnode_file[v],
			fr->start_line ? fr->start_line : p->fnode_line[v], kernel);
	}
	fprintf(out, "],\n\"n\":%zu,\"tree\":", n);
	put_base64(out, &tree);
	fputs(",\n\"threads\":[", out);
	for (size_t t = 0; t < p->nthreads; t++) {
		fprintf(out, "%s\n{\"name\":", t ? "," : "");
		td_json_string(out, rp_str(p, p->threads[t].name), TD_JSON_IN_SCRIPT);
		fprintf(out, ",\"tid\":%u,\"self\":", p->threads[t].tid);
		if (put_self(out, &L, t) < 0)
			goto out;
		fputc('}', out);
	}
	td_fmt_utc(p->first_ns, a, sizeof(a));
	td_fmt_utc(p->last_ns, b, sizeof(b));
	fprintf(out, "],\n\"first\":\"%s\",\"last\":\"%s\",\"samples\":%llu,\"mode\":", a, b,
		(unsigned long long)p->samples);
	td_json_string(out, rp_mode_name(p), TD_JSON_IN_SCRIPT);
	fputs(",\"meaning\":", out);
	td_json_string(out, rp_mode_meaning(p), TD_JSON_IN_SCRIPT);
	if (put_waits(out, p, pre, fidx, nfuncs) < 0)
		goto out;
	fputc('}', out);
	fputs(page_script, out);
	r = ferror(out) ? -EIO : 0;
out:
	free(pre);
	free(order);
	free(size);
	free(stack);
	free(fidx);
	free(func_node);
	self_lists_free(&L);
	td_buf_free(&tree);
	return r;
}
