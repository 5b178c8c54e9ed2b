"""deploy/ validated without a cluster or a Docker engine: hadolint, yamllint, kubectl kustomize,
kubernetes-validate --strict (offline schemas), plus the facts the worker depends on."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bias_audit.worker.ops_server import ops_app
from bias_audit.worker.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
OVERLAYS = [
    "redis-streams",
    "pubsub",
    "redis-streams-responses",
    "pubsub-responses",
    "redis-streams-judges",
    "pubsub-judges",
]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    found = shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if not found:
        if IN_CI:
            pytest.fail(f"CI=true but {name} is not installed")
        pytest.skip(f"{name} not installed")
    return found


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_dockerfile_passes_hadolint():
    result = run(tool("hadolint"), str(DEPLOY / "Dockerfile"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_is_non_root_pinned_and_has_a_healthcheck():
    text = (DEPLOY / "Dockerfile").read_text()
    froms = [line.split()[1] for line in text.splitlines() if line.startswith("FROM ")]
    assert froms and all(":" in image and not image.endswith(":latest") for image in froms)
    assert "USER 10001" in text and "HEALTHCHECK" in text and "/healthz" in text


def test_yaml_passes_yamllint():
    result = run(tool("yamllint"), "-c", str(DEPLOY / ".yamllint.yaml"), str(DEPLOY))
    assert result.returncode == 0, result.stdout + result.stderr


def rendered(overlay: str) -> list[dict]:
    result = run(tool("kubectl"), "kustomize", str(DEPLOY / "kustomize" / "overlays" / overlay))
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlays_render_and_pass_strict_schema_validation(overlay, tmp_path):
    result = run(tool("kubectl"), "kustomize", str(DEPLOY / "kustomize" / "overlays" / overlay))
    assert result.returncode == 0, result.stderr
    manifest = tmp_path / f"{overlay}.yaml"
    manifest.write_text(result.stdout)
    checked = run(tool("kubernetes-validate"), "--strict", str(manifest))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for kind in ("deployment", "service", "poddisruptionbudget", "configmap", "cronjob"):
        assert f"passed for resource {kind}/" in checked.stdout + checked.stderr


def by_kind(docs: list[dict], kind: str) -> dict:
    [doc] = [d for d in docs if d["kind"] == kind]
    return doc


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_deployment_matches_what_the_worker_needs(overlay):
    docs = rendered(overlay)
    deployment = by_kind(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    config = by_kind(docs, "ConfigMap")["data"]
    settings = Settings(**{k.removeprefix("BIAS_AUDIT_").lower(): v for k, v in config.items()})
    assert pod["terminationGracePeriodSeconds"] > settings.shutdown_grace_s + 10  # drain, then exit
    paths = {route.resource.canonical for route in ops_app(None, None).router.routes()}
    assert container["livenessProbe"]["httpGet"]["path"] in paths
    assert container["readinessProbe"]["httpGet"]["path"] in paths
    assert container["ports"][0]["containerPort"] == settings.ops_port
    assert settings.ops_host == "0.0.0.0" and Settings().ops_host == "127.0.0.1"  # probes reach it; elsewhere loopback
    env = {e["name"]: e for e in container["env"]}
    assert env["BIAS_AUDIT_CONSUMER_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["BIAS_AUDIT_HASH_SECRET"]["valueFrom"]["secretKeyRef"]["name"]
    store = env["BIAS_AUDIT_STORE_URL"]["valueFrom"]["secretKeyRef"]  # the database URL, from a Secret
    assert store["name"] == "bias-audit-store-writer" and not store.get("optional")  # not the owner's
    assert pod["automountServiceAccountToken"] is False
    assert "volumes" not in pod and "volumeMounts" not in container  # no record on a pod's disk
    [migrate] = pod["initContainers"]  # migrations before the worker starts, with the same URL and image
    migrate_env = {e["name"]: e for e in migrate["env"]}
    assert migrate["args"] == ["setup"] and migrate["image"] == container["image"]
    assert migrate_env["BIAS_AUDIT_STORE_URL"]["valueFrom"]["secretKeyRef"]["name"] == "bias-audit-store-owner"
    assert migrate_env["BIAS_AUDIT_BROKER_URL"]["value"] == ""  # the store only: no broker admin rights needed
    cron = by_kind(docs, "CronJob")["spec"]  # the retention policy, daily, on the same store
    [retention] = cron["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert retention["args"][0] == "retention" and retention["image"] == container["image"]
    retention_store = {e["name"]: e for e in retention["env"]}["BIAS_AUDIT_STORE_URL"]["valueFrom"]["secretKeyRef"]
    assert retention_store["name"] == "bias-audit-store-retention"
    assert cron["jobTemplate"]["spec"]["template"]["spec"]["automountServiceAccountToken"] is False
    assert cron["concurrencyPolicy"] == "Forbid"
    assert container["resources"]["requests"]["cpu"] and container["resources"]["requests"]["memory"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert by_kind(docs, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"] == selector
    assert by_kind(docs, "Service")["spec"]["selector"] == selector
    scaled = by_kind(docs, "ScaledObject")  # a CRD: no offline schema, so its facts are checked here
    assert scaled["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    [trigger] = scaled["spec"]["triggers"]
    # each overlay scales on the backlog of the input its workers consume
    assert settings.consumed_topic == (
        "llm.responses"
        if overlay.endswith("-responses")
        else "judge.verdicts"
        if overlay.endswith("-judges")
        else "council.sessions"
    )
    if overlay.startswith("pubsub"):
        assert settings.transport == "pubsub" and settings.redis_url
        assert trigger["type"] == "gcp-pubsub"
        assert trigger["metadata"]["subscriptionName"] == settings.subscription_for(settings.consumed_topic)
    else:
        assert settings.transport == "redis"
        assert trigger["type"] == "redis-streams"
        assert trigger["metadata"]["stream"] == settings.consumed_topic
        assert trigger["metadata"]["consumerGroup"] == settings.group


def test_cloud_run_worker_pool_example_is_a_pubsub_worker():
    [pool] = list(yaml.safe_load_all((DEPLOY / "cloud-run" / "worker-pool.yaml").read_text()))
    assert pool["kind"] == "WorkerPool"
    env = {e["name"]: e for e in pool["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["BIAS_AUDIT_BROKER_URL"]["value"].startswith("pubsub://")
    assert env["BIAS_AUDIT_OPS_HOST"]["value"] == "0.0.0.0"
    assert env["BIAS_AUDIT_REDIS_URL"]["value"].startswith("redis://")
    assert env["BIAS_AUDIT_STORE_URL"]["valueFrom"]["secretKeyRef"]["name"]  # not an embedded store per instance
