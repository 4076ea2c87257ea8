/* html output: one self-contained file (no network, no CDN) with an
 * interactive flame graph: click a frame to zoom, reset, search with
 * highlight and matched percentage, hover for the full name, file:line,
 * module and percentages, a thread filter, and the time range of the data.
 *
 * The page embeds the call tree merged by function in preorder, so that a
 * node's subtree is the run of nodes that follows it: per node its
 * function (an index into a table of name, module, file, line) and its
 * subtree size, as base64'd varints; each thread's self counts as pairs
 * (preorder index delta, count).  Millions of nodes then cost a few bytes
 * each and decode into typed arrays; totals for the selected threads are
 * one backward pass, a search tests each distinct name once and sums the
 * topmost matches in one forward pass that skips matched subtrees, and only
 * frames at least half a pixel wide are drawn (their children sorted by
 * total when drawn), so 100k unique stacks stay fast.  The body's
 * data-drawn-ms says when the first drawing ended (for the benchmark).  Names are embedded as
 * JSON with <, > and & escaped, so no name can end the script.  The URL hash
 * #zoom=NAME&search=TEXT&thread=NAME applies the same actions as clicks and
 * typing (used by the tests, useful for links). */
#define _GNU_SOURCE
#include "report-internal.h"

#include <errno.h>
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
	".f.m{background:#c56cf0}\n"
	"#tip{position:fixed;display:none;background:#ffe;border:1px solid #888;padding:4px;"
	"max-width:700px;word-break:break-all;pointer-events:none}\n"
	"</style></head><body>\n"
	"<div id=\"bar\"><b>tracerd</b><span id=\"range\"></span>"
	"thread <select id=\"thread\"></select>"
	"<input id=\"search\" placeholder=\"search (regex)\" size=\"30\">"
	"<span id=\"match\"></span><button id=\"reset\">reset zoom</button></div>\n"
	"<div id=\"graph\"></div><div id=\"tip\"></div>\n"
	"<script type=\"application/json\" id=\"data\">";

static const char page_script[] =
	"</script>\n<script>\n"
	"'use strict';\n"
	"const D=JSON.parse(document.getElementById('data').textContent);\n"
	"function bytes(s){const b=atob(s),u=new Uint8Array(b.length);"
	"for(let i=0;i<b.length;i++)u[i]=b.charCodeAt(i);return u;}\n"
	"function varints(u,put){let x=0,sh=1,k=0;for(let i=0;i<u.length;i++){const c=u[i];"
	"x+=(c&127)*sh;if(c&128)sh*=128;else{put(k++,x);x=0;sh=1;}}}\n"
	"const S=D.strings,FN=D.funcs,n=D.n,F=new Int32Array(n),Z=new Int32Array(n),"
	"P=new Int32Array(n);\n"
	"{Z[0]=n;varints(bytes(D.tree),(k,x)=>{if(k&1)Z[(k>>1)+1]=x;else F[(k>>1)+1]=x;});"
	"const st=new Int32Array(n);let sp=0;for(let i=1;i<n;i++){"
	"while(i>=st[sp]+Z[st[sp]])sp--;P[i]=st[sp];st[++sp]=i;}}\n"
	"const TS=D.threads.map(t=>{const r=[];let at=0;"
	"varints(bytes(t.self),(k,x)=>{if(k&1)r.push(x);else r.push(at+=x);});return r;});\n"
	"let self=new Float64Array(n),total=new Float64Array(n),hit=new Uint8Array(FN.length);\n"
	"let root=0,re=null;\n"
	"const $=id=>document.getElementById(id),graph=$('graph'),tip=$('tip');\n"
	"const nm=k=>k?S[FN[F[k]][0]]:'all';\n"
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
	"function bar(k,x,w,d,f){const e=document.createElement('div');"
	"e.className='f'+(matches(k)?' m':'');"
	"e.style.left=x+'px';e.style.top=(d*18)+'px';e.style.width=w+'px';"
	"e.textContent=w>30?nm(k):'';e.dataset.n=k;f.appendChild(e);}\n"
	"function pct(v){return total[0]?(100*v/total[0]).toFixed(2)+'%':'0%';}\n"
	"function zoomTo(k){root=k;render();}\n"
	"function find(name){let best=0;for(let i=1;i<n;i++)"
	"if(total[i]>(best?total[best]:0)&&nm(i)===name)best=i;return best;}\n"
	"graph.addEventListener('click',e=>{const k=e.target.dataset.n;"
	"if(k!==undefined)zoomTo(+k);});\n"
	"$('reset').addEventListener('click',()=>zoomTo(0));\n"
	"$('search').addEventListener('input',e=>{setSearch(e.target.value);render();});\n"
	"graph.addEventListener('mousemove',e=>{const a=e.target.dataset.n;"
	"if(a===undefined){tip.style.display='none';return;}const k=+a,fn=k?FN[F[k]]:null;"
	"tip.textContent=nm(k)+(fn&&fn[2]?'  at '+S[fn[2]]+(fn[3]?':'+fn[3]:''):'')+"
	"(fn&&fn[1]?'  in '+S[fn[1]]:'')+'  total '+pct(total[k])+'  self '+pct(self[k])+"
	"' ('+total[k]+' samples)';tip.style.display='block';"
	"tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';});\n"
	"graph.addEventListener('mouseleave',()=>tip.style.display='none');\n"
	"const ALL=D.threads.map((t,i)=>i),sel=$('thread');sel.add(new Option('all threads','-1'));"
	"D.threads.forEach((t,i)=>sel.add(new Option(t.name+' ('+t.tid+')',i)));\n"
	"sel.addEventListener('change',()=>{load(sel.value<0?ALL:[+sel.value]);"
	"root=0;render();});\n"
	"$('range').textContent=D.first+' .. '+D.last+', '+D.samples+' samples, mode '+D.mode;\n"
	"$('range').title=D.meaning;\n"
	"load(ALL);\n"
	"const h=new URLSearchParams(location.hash.slice(1));\n"
	"if(h.get('thread')!==null){const i=D.threads.findIndex(t=>t.name===h.get('thread'));"
	"if(i>=0){sel.value=i;load([i]);}}\n"
	"if(h.get('search')){$('search').value=h.get('search');setSearch(h.get('search'));}\n"
	"root=h.get('zoom')?find(h.get('zoom')):0;\n"
	"render();\n"
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

int rp_html(FILE *out, const struct rp_profile *p)
{
	size_t n = p->nfnodes ? p->nfnodes : 1, nfuncs = 1, k = 0, sp = 0;
	/* fnode -> preorder index; preorder index -> fnode; subtree sizes;
	 * function-level frame -> index in the funcs table + 1 */
	uint32_t *pre = calloc(n, sizeof(*pre)), *order = calloc(n, sizeof(*order));
	uint32_t *size = calloc(n, sizeof(*size)), *stack = calloc(n, sizeof(*stack));
	uint32_t *fidx = calloc(p->nframes + 1, sizeof(*fidx)), *func_node = calloc(n, sizeof(*func_node));
	struct td_buf tree = { 0 };
	uint64_t *tcounts = NULL, key, count;
	size_t *tstart = calloc(p->nthreads + 1, sizeof(*tstart));
	char a[32], b[32];
	int r = -ENOMEM;

	if (!pre || !order || !size || !stack || !fidx || !func_node || !tstart)
		goto out;
	/* subtree sizes: parents precede children in fnodes */
	for (size_t i = 0; i < n; i++)
		size[i] = 1;
	for (size_t i = n; i-- > 1;)
		size[p->fnodes[i].parent] += size[i];
	/* preorder by an explicit stack (depth is unbounded in principle) */
	stack[sp++] = 0;
	while (sp) {
		uint32_t v = stack[--sp];

		pre[v] = (uint32_t)k;
		order[k++] = v;
		if (p->nfnodes)
			for (uint32_t c = p->fnodes[v].first_child; c; c = p->fnodes[c].next_sibling)
				stack[sp++] = c;
	}
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
	if (tree.failed)
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

		fprintf(out, ",\n[%u,%u,%u,%u]", fr->func, fr->module, p->fnode_file[v],
			fr->start_line ? fr->start_line : p->fnode_line[v]);
	}
	fprintf(out, "],\n\"n\":%zu,\"tree\":", n);
	put_base64(out, &tree);

	/* each thread's self counts in preorder: bucket the (thread, node)
	 * counts by thread, then sort each bucket by preorder index */
	for (size_t cur = 0; td_map_next(&p->thread_node, &cur, &key, &count);)
		if (RP_TN_THREAD(key) < p->nthreads)
			tstart[RP_TN_THREAD(key) + 1]++;
	for (size_t t = 0; t < p->nthreads; t++)
		tstart[t + 1] += tstart[t];
	tcounts = calloc(tstart[p->nthreads] + 1, 2 * sizeof(*tcounts));
	if (!tcounts)
		goto out;
	{
		size_t *fill = calloc(p->nthreads + 1, sizeof(*fill));

		if (!fill)
			goto out;
		for (size_t cur = 0; td_map_next(&p->thread_node, &cur, &key, &count);) {
			size_t t, at;

			if ((t = RP_TN_THREAD(key)) >= p->nthreads)
				continue;
			at = tstart[t] + fill[t]++;
			tcounts[2 * at] = pre[p->fnode_of[RP_TN_NODE(key)]];
			tcounts[2 * at + 1] = count;
		}
		free(fill);
	}
	fputs(",\n\"threads\":[", out);
	for (size_t t = 0; t < p->nthreads; t++) {
		struct td_buf v = { 0 };
		uint64_t last = 0;

		if (tstart[t + 1] > tstart[t]) /* tcounts may be NULL when empty */
			rp_sort(tcounts + 2 * tstart[t], tstart[t + 1] - tstart[t],
				2 * sizeof(*tcounts), u64_cmp);
		for (size_t i = tstart[t]; i < tstart[t + 1]; i++) {
			td_buf_put_varint(&v, tcounts[2 * i] - last);
			td_buf_put_varint(&v, tcounts[2 * i + 1]);
			last = tcounts[2 * i];
		}
		if (v.failed) {
			td_buf_free(&v);
			goto out;
		}
		fprintf(out, "%s\n{\"name\":", t ? "," : "");
		td_json_string(out, rp_str(p, p->threads[t].name), TD_JSON_IN_SCRIPT);
		fprintf(out, ",\"tid\":%u,\"self\":", p->threads[t].tid);
		put_base64(out, &v);
		fputc('}', out);
		td_buf_free(&v);
	}
	td_fmt_utc(p->first_ns, a, sizeof(a));
	td_fmt_utc(p->last_ns, b, sizeof(b));
	fprintf(out, "],\n\"first\":\"%s\",\"last\":\"%s\",\"samples\":%llu,\"mode\":", a, b,
		(unsigned long long)p->samples);
	td_json_string(out, rp_mode_name(p), TD_JSON_IN_SCRIPT);
	fputs(",\"meaning\":", out);
	td_json_string(out, rp_mode_meaning(p), TD_JSON_IN_SCRIPT);
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
	td_buf_free(&tree);
	free(tcounts);
	free(tstart);
	return r;
}
