import re,sys
def parse(path):
    res={}; f=None; cur=None; rcs={}
    for l in open(path,errors='replace').read().replace('\r','').split('\n'):
        m=re.match(r'=== FILE tests/integration/(\S+)',l)
        if m: f=m.group(1); cur=None; continue
        m=re.match(r'=== RC (\d+)',l)
        if m: rcs[f]=int(m.group(1)); continue
        m=re.match(r'^(ok|not ok) (\d+) (.*)$',l)
        if m and f:
            name=m.group(3); st=m.group(1)
            if st=='ok' and re.search(r' # skip',name):
                st='skip'; name=re.sub(r' # skip.*$','',name)
            cur=f+': '+name; res[cur]=[st,[]]; continue
        if cur and l.startswith('#'): res[cur][1].append(l[1:].strip())
    return res,rcs
def counts(d):
    return {k:sum(1 for v in d.values() if v[0]==k) for k in ('ok','skip','not ok')}
if __name__=='__main__':
    r,rr=parse('runc-bats/runc.log')
    try: m,mr=parse(sys.argv[2] if len(sys.argv)>2 else 'runc-bats/maibox.log')
    except FileNotFoundError: m,mr={},{}
    for n,d,rc in (('runc',r,rr),('maibox',m,mr)):
        c=counts(d); print('%s: ok(pass) %d, skip %d, not ok %d, total %d; ok+skip=%d; files rc!=0 (124=timeout): %s'%(n,c['ok'],c['skip'],c['not ok'],len(d),c['ok']+c['skip'],{k:v for k,v in rc.items() if v not in (0,1)}))
    print()
    mode=sys.argv[1] if len(sys.argv)>1 else 'diff'
    print('| test | runc | maibox | maibox error (from bats diagnostics) |'); print('|---|---|---|---|')
    for k in r:
        a=r[k]; b=m.get(k,['missing',[]])
        if a[0]!=b[0] and b[0]!='ok':
            diag=[x for x in b[1] if x and not x.startswith('(from') and not x.startswith('from function') and not x.startswith('(in test file') and not x.startswith('rmdir:')]
            errs=[x for x in diag if x.startswith('maibox: error') or 'error' in x.lower() and not x.startswith('maibox ')]
            assertion=[x for x in diag if x.startswith('`')]
            cmds=[x for x in diag if re.match(r'^maibox .*\(status=\d+\):$',x) and not x.startswith('maibox spec')]
            parts=[]
            if assertion: parts.append('assert '+assertion[0])
            if cmds: parts.append('cmd: '+cmds[-1])
            if errs: parts.append(errs[0])
            txt=' ⏎ '.join(parts)[:450].replace('|','\\|')
            txt=re.sub(r'/tmp/bats-run-\S+?/runc\.\w+/','<tmp>/',txt)
            print('| %s | %s | %s | %s |'%(k,a[0],b[0],txt))
