/* html output: one self-contained file (no network, no CDN) with an
 * interactive flame graph: click a frame to zoom, reset, search with
 * highlight and matched percentage, hover for the full name, file:line,
 * module and percentages, a thread filter, and the time range of the data.
 *
 * The page embeds the call tree merged by function (node = parent, name,
 * module, file, line) and each thread's self counts; the script computes
 * totals for the selected thread and draws only frames at least half a
 * pixel wide, so 100k unique stacks stay fast.  Names are embedded as JSON
 * with <, > and & escaped, so no name can end the script.  The URL hash
 * #zoom=NAME&search=TEXT&thread=NAME applies the same actions as clicks and
 * typing (used by the test, useful for links). */
#define _GNU_SOURCE
#include "report-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void js_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

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
	"const S=D.strings,N=D.nodes,kids=N.map(()=>[]);\n"
	"for(let i=1;i<N.length;i++)kids[N[i][0]].push(i);\n"
	"let self=new Float64Array(N.length),total=new Float64Array(N.length);\n"
	"let root=0,re=null;\n"
	"const $=id=>document.getElementById(id),graph=$('graph'),tip=$('tip');\n"
	"const nm=n=>n?S[N[n][1]]:'all';\n"
	"function load(counts){self.fill(0);for(const [n,c] of counts)self[n]+=c;"
	"total.set(self);for(let i=N.length-1;i>0;i--)total[N[i][0]]+=total[i];"
	"kids.forEach(k=>k.sort((a,b)=>total[b]-total[a]||(nm(a)<nm(b)?-1:1)));}\n"
	"function matches(n){return re&&n&&re.test(nm(n));}\n"
	"function render(){graph.textContent='';const W=graph.clientWidth||1200,"
	"f=document.createDocumentFragment();let depth=0,maxd=0;"
	"const anc=[];for(let a=root;a;a=N[a][0])anc.unshift(a);anc.unshift(0);"
	"for(let i=0;i<anc.length-1;i++)bar(anc[i],0,W,depth++,f);"
	"(function walk(n,x,w,d){bar(n,x,w,d,f);maxd=Math.max(maxd,d);let cx=x;"
	"for(const c of kids[n]){if(!total[n])break;const cw=w*total[c]/total[n];"
	"if(cw<0.5)continue;walk(c,cx,cw,d+1);cx+=cw;}})(root,0,W,depth);"
	"graph.appendChild(f);graph.style.height=((maxd+1)*18+4)+'px';"
	"let m=0;if(re){(function sum(n,under){const hit=!under&&matches(n);if(hit)m+=total[n];"
	"for(const c of kids[n])sum(c,under||hit);})(0,false);"
	"$('match').textContent='matched '+(total[0]?(100*m/total[0]).toFixed(2):'0.00')+'%';}"
	"else $('match').textContent='';}\n"
	"function bar(n,x,w,d,f){const e=document.createElement('div');"
	"e.className='f'+(matches(n)?' m':'');"
	"e.style.left=x+'px';e.style.top=(d*18)+'px';e.style.width=w+'px';"
	"e.textContent=w>30?nm(n):'';e.dataset.n=n;f.appendChild(e);}\n"
	"function pct(v){return total[0]?(100*v/total[0]).toFixed(2)+'%':'0%';}\n"
	"function zoomTo(n){root=n;render();}\n"
	"function find(name){let best=0;for(let i=1;i<N.length;i++)"
	"if(nm(i)===name&&total[i]>(best?total[best]:0))best=i;return best;}\n"
	"graph.addEventListener('click',e=>{const n=e.target.dataset.n;"
	"if(n!==undefined)zoomTo(+n);});\n"
	"$('reset').addEventListener('click',()=>zoomTo(0));\n"
	"$('search').addEventListener('input',e=>{try{re=e.target.value?"
	"new RegExp(e.target.value):null;}catch(x){re=null;}render();});\n"
	"graph.addEventListener('mousemove',e=>{const n=e.target.dataset.n;"
	"if(n===undefined){tip.style.display='none';return;}const k=+n;"
	"tip.textContent=nm(k)+(k&&N[k][3]?'  at '+S[N[k][3]]+':'+N[k][4]:'')+"
	"(k&&N[k][2]?'  in '+S[N[k][2]]:'')+'  total '+pct(total[k])+'  self '+pct(self[k])+"
	"' ('+total[k]+' samples)';tip.style.display='block';"
	"tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';});\n"
	"graph.addEventListener('mouseleave',()=>tip.style.display='none');\n"
	"const sel=$('thread');sel.add(new Option('all threads','-1'));"
	"D.threads.forEach((t,i)=>sel.add(new Option(t.name+' ('+t.tid+')',i)));\n"
	"sel.addEventListener('change',()=>{load(sel.value<0?D.all:D.threads[+sel.value].self);"
	"root=0;render();});\n"
	"$('range').textContent=D.first+' .. '+D.last+', '+D.samples+' samples';\n"
	"load(D.all);\n"
	"const h=new URLSearchParams(location.hash.slice(1));\n"
	"if(h.get('thread')!==null){const i=D.threads.findIndex(t=>t.name===h.get('thread'));"
	"if(i>=0){sel.value=i;load(D.threads[i].self);}}\n"
	"if(h.get('search')){$('search').value=h.get('search');re=new RegExp(h.get('search'));}\n"
	"root=h.get('zoom')?find(h.get('zoom')):0;\n"
	"render();\n"
	"window.addEventListener('resize',render);\n"
	"</script></body></html>\n";

int rp_html(FILE *out, const struct rp_profile *p)
{
	char a[32], b[32];
	bool first;

	fputs(page_head, out);
	fputs("{\"strings\":[", out);
	for (size_t i = 0; i < p->nstrs; i++) {
		if (i)
			fputc(',', out);
		js_string(out, p->strs[i]);
	}
	fputs("],\n\"nodes\":[[0,0,0,0,0]", out);
	for (size_t i = 1; i < p->nfnodes; i++) {
		const struct rp_frame *f = &p->frames[p->fnodes[i].frame];

		fprintf(out, ",\n[%u,%u,%u,%u,%u]", p->fnodes[i].parent, f->func, f->module,
			p->fnode_file[i], p->fnode_line[i]);
	}
	fputs("],\n\"all\":[", out);
	first = true;
	for (size_t i = 1; i < p->nfnodes; i++)
		if (p->fnodes[i].count) {
			fprintf(out, "%s[%zu,%llu]", first ? "" : ",", i,
				(unsigned long long)p->fnodes[i].count);
			first = false;
		}
	fputs("],\n\"threads\":[", out);
	for (size_t t = 0; t < p->nthreads; t++) {
		fprintf(out, "%s\n{\"name\":", t ? "," : "");
		js_string(out, rp_str(p, p->threads[t].name));
		fprintf(out, ",\"tid\":%u,\"self\":[", p->threads[t].tid);
		first = true;
		for (size_t k = 0; k < p->thread_node.cap; k++) {
			uint64_t key = p->thread_node.t ? p->thread_node.t[k].key : 0;

			if (!key || RP_TN_THREAD(key) != t)
				continue;
			fprintf(out, "%s[%u,%llu]", first ? "" : ",", p->fnode_of[RP_TN_NODE(key)],
				(unsigned long long)p->thread_node.t[k].val);
			first = false;
		}
		fputs("]}", out);
	}
	td_fmt_utc(p->first_ns, a, sizeof(a));
	td_fmt_utc(p->last_ns, b, sizeof(b));
	fprintf(out, "],\n\"first\":\"%s\",\"last\":\"%s\",\"samples\":%llu}", a, b,
		(unsigned long long)p->samples);
	fputs(page_script, out);
	return ferror(out) ? -EIO : 0;
}
