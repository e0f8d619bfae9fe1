import sys,re
def parse(path):
    files={}; cur=None
    for line in open(path,errors='replace'):
        line=line.rstrip('\n')
        if line.startswith('=== FILE '):
            cur=line[9:].split('/')[1]; files[cur]={'ok':0,'notok':0,'skip':0,'rc':None,'fails':[],'plan':None,'lines':[]}
            continue
        if cur is None: continue
        f=files[cur]
        if line.startswith('=== RC '):
            f['rc']=int(line[7:]); continue
        f['lines'].append(line)
        m=re.match(r'^(not ok|ok) (\d+)(.*)$',line)
        if m:
            if '# SKIP' in line or '# skip' in line: f['skip']+=1
            elif m.group(1)=='ok': f['ok']+=1
            else: f['notok']+=1; f['fails'].append(line)
        m=re.match(r'^1\.\.(\d+)',line)
        if m: f['plan']=int(m.group(1))
    for k,f in files.items():
        f['pass']= f['rc']==0 and f['notok']==0 and f['plan'] is not None and (f['ok']+f['skip'])==f['plan']
    return files
if __name__=='__main__':
    a=parse(sys.argv[1])
    tot=[0,0,0]
    for k,f in sorted(a.items()):
        tot[0]+=f['ok'];tot[1]+=f['notok'];tot[2]+=f['skip']
        print(('PASS' if f['pass'] else 'FAIL'),k,'rc=%s ok=%d notok=%d skip=%d plan=%s'%(f['rc'],f['ok'],f['notok'],f['skip'],f['plan']))
    print('files passed: %d / %d ; testpoints ok=%d notok=%d skip=%d'%(sum(f['pass'] for f in a.values()),len(a),*tot))
