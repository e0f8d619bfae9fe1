import re,sys
def parse(path):
    res={}; grp=None; cur=None; timeouts=[]
    lines=open(path,errors='replace').read().split('\n')
    rcgroup=None
    for l in lines:
        m=re.match(r'=== GROUP (\S+)',l)
        if m: rcgroup=m.group(1); continue
        m=re.match(r'=== RC (\d+)',l)
        if m and m.group(1)!='0': timeouts.append((rcgroup,m.group(1)))
        m=re.match(r'# Start group (\S+)',l)
        if m: grp=m.group(1); cur=None; continue
        if l.startswith('# End group'): grp=None; cur=None; continue
        if grp is None: continue
        m=re.match(r"\d+ / \d+ : (.+?) : (ok|skipped|not ok)$",l)
        if m:
            cur=grp+'::'+m.group(1); res[cur]=[m.group(2),[]]; continue
        if cur and res[cur][0]=='not ok': res[cur][1].append(l.strip())
    return res,timeouts
r,rt=parse('contest/runc.log'); m,mt=parse(sys.argv[1] if len(sys.argv)>1 else 'contest/maibox.log')
for n,d,t in (('runc',r,rt),('maibox',m,mt)):
    c={k:sum(1 for v in d.values() if v[0]==k) for k in ('ok','not ok','skipped')}
    print('%s: passed %d, failed %d, skipped %d, total %d; groups with nonzero rc (124=timeout): %s'%(n,c['ok'],c['not ok'],c['skipped'],len(d),t))
print()
print('| test | runc | maibox | maibox error |'); print('|---|---|---|---|')
for k in sorted(set(r)|set(m)):
    a=r.get(k,['missing',[]]); b=m.get(k,['missing (group produced no result)',[]])
    if a[0]!=b[0]:
        err=' '.join(x for x in b[1] if x)[:400].replace('|','\\|')
        print('| %s | %s | %s | %s |'%(k,a[0],b[0],err))
