import os,sys,re
from importlib.machinery import SourceFileLoader
A=SourceFileLoader('a',os.path.join(os.path.dirname(os.path.abspath(__file__)),'rt-analyze.py')).load_module()
r=A.parse('runtime-tools-results/runc.log'); m=A.parse(sys.argv[1] if len(sys.argv)>1 else 'runtime-tools-results/maibox.log')
def lenient(f): return f['rc']==0 and f['notok']==0
def orphan_errors(f):
    errs=[]; orphan=False; prev=''
    for l in f['lines']:
        if l=='  ---': orphan=not re.match(r'^(ok|not ok) \d+',prev)
        elif l=='  ...': orphan=False
        elif orphan and l.startswith('    "error"') and not l.startswith('    "error": ""'): errs.append(l.strip())
        if l.strip(): prev=l
    return errs
def strict(f): return lenient(f) and f['ok']>0 and not orphan_errors(f)
for name,fn in (('lenient (exit 0 and no "not ok", as youki CI)',lenient),('strict (lenient + >=1 ok line + no top-level (orphan) \"error\" diagnostic)',strict)):
    print('%s: runc %d/58, maibox %d/58'%(name,sum(fn(f) for f in r.values()),sum(fn(f) for f in m.values())))
print()
print('| file | runc | maibox | maibox failure (first distinct messages) |')
print('|---|---|---|---|')
for k in sorted(r):
    a=r[k]; b=m[k]
    def st(f): return 'PASS' if strict(f) else ('pass-lenient' if lenient(f) else 'FAIL(ok=%d,notok=%d,rc=%s)'%(f['ok'],f['notok'],f['rc']))
    if st(a)==st(b) and a['notok']==b['notok']: continue
    reasons=[]
    for l in b['lines']:
        if l.startswith('maibox: error') or l.startswith('not ok') or l.startswith('    "error"') or l.startswith('# ') and 'expect' not in l:
            l=l.strip()
            if l not in reasons: reasons.append(l)
    print('| %s | %s | %s | %s |'%(k,st(a),st(b),' <br> '.join(x.replace('|','\\|')[:300] for x in reasons[:4])))
