//! The deployment files (`deploy/`): every kustomize overlay renders and its objects validate
//! against the Kubernetes schemas offline, the cross-file rules hold (drain vs grace period,
//! probe and SSH ports, the host key from one Secret, the securityContext) and the
//! Containerfile passes its lint — all through `deploy/check`, the script an operator runs.
//! Copies broken on purpose show that each rule can fail.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

fn check(dir: &Path) -> Output {
    Command::new(deploy_dir().join("check"))
        .arg(dir)
        .output()
        .expect("deploy/check runs")
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A copy of `deploy/` with `from` replaced by `to` in `file` (which must contain it).
fn broken(file: &str, from: &str, to: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&deploy_dir(), tmp.path());
    let path = tmp.path().join(file);
    let body = std::fs::read_to_string(&path).unwrap();
    assert!(body.contains(from), "{file} no longer contains {from:?}");
    std::fs::write(&path, body.replacen(from, to, 1)).unwrap();
    tmp
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Fails unless `deploy/check` on the copy fails and says `expect`.
fn rejects(copy: &tempfile::TempDir, expect: &str) {
    let out = check(copy.path());
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains(expect), "expected {expect:?} in\n{all}");
}

#[test]
fn the_repository_deploy_files_pass() {
    let out = check(&deploy_dir());
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ok (local tigris )"),
        "both overlays checked: {all}"
    );
}

#[test]
fn a_grace_period_shorter_than_the_drain_is_refused() {
    let copy = broken(
        "k8s/base/deployment.yaml",
        "terminationGracePeriodSeconds: 40",
        "terminationGracePeriodSeconds: 30",
    );
    rejects(
        &copy,
        "terminationGracePeriodSeconds 30 leaves the 25 s drain",
    );
}

#[test]
fn a_drain_longer_than_the_grace_period_is_refused() {
    let copy = broken(
        "k8s/overlays/tigris/config.yaml",
        "AWS_REGION: auto",
        "AWS_REGION: auto\n  FORKBOX_DRAIN_GRACE: \"60\"",
    );
    rejects(&copy, "leaves the 60 s drain");
}

#[test]
fn an_unknown_field_fails_the_schema() {
    let copy = broken(
        "k8s/base/pdb.yaml",
        "maxUnavailable: 1",
        "maxUnavailable: 1\n  maxUnavalable: 1",
    );
    rejects(&copy, "do not validate against Kubernetes");
}

#[test]
fn probes_on_the_ssh_port_are_refused() {
    let copy = broken(
        "k8s/base/deployment.yaml",
        "path: /readyz\n              port: http",
        "path: /readyz\n              port: ssh",
    );
    rejects(
        &copy,
        "readinessProbe must GET /readyz on the --http-listen port",
    );
}

#[test]
fn a_host_key_outside_the_secret_is_refused() {
    let copy = broken(
        "k8s/base/deployment.yaml",
        "--host-key=/etc/forkbox/host-key/ssh_host_ed25519_key",
        "--host-key=/var/lib/forkbox/host_ed25519",
    );
    rejects(
        &copy,
        "--host-key must be a file of a mounted Secret volume",
    );
}

#[test]
fn a_writable_root_filesystem_is_refused() {
    let copy = broken(
        "k8s/base/deployment.yaml",
        "readOnlyRootFilesystem: true",
        "readOnlyRootFilesystem: false",
    );
    rejects(&copy, "readOnlyRootFilesystem must be true");
}

#[test]
fn egress_open_on_every_port_is_refused() {
    let copy = broken(
        "k8s/base/networkpolicy.yaml",
        "    - ports:\n        - port: 443\n          protocol: TCP\n",
        "    - to:\n        - ipBlock:\n            cidr: 0.0.0.0/0\n",
    );
    let out = check(copy.path());
    // The local overlay replaces egress; the tigris overlay keeps the base's.
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("tigris: NetworkPolicy/forkbox has an egress rule open on every port"),
        "{all}"
    );
}

#[test]
fn a_root_image_user_is_refused() {
    let copy = broken("Containerfile", "USER 65532:65532", "USER root");
    rejects(&copy, "the runtime stage must end as a non-root USER");
}

#[test]
fn a_containerfile_lint_finding_fails() {
    // A `cd` inside RUN is hadolint's DL3003 ("use WORKDIR").
    let copy = broken(
        "Containerfile",
        "WORKDIR /src\n",
        "WORKDIR /src\nRUN cd /tmp && ls\n",
    );
    rejects(&copy, "Containerfile: hadolint findings above");
}
