/** Maintenance: the push and pop switches, this instance's failover buffer, and a stats refresh. */

import { useContext, useEffect, useState } from "preact/hooks";
import { admin } from "../api";
import { ActionButton, ActionResult } from "../components/action";
import { ConfirmDialog } from "../components/dialog";
import { Badge, Facts, Loaded, PageHeader, Panel, Time } from "../components/ui";
import { bytes, count } from "../format";
import { PermissionsContext, useAction, useResource } from "../hooks";

type Switch = "push" | "pop";

export function MaintenancePage() {
  const state = useResource("maintenance", (signal) => admin.maintenance({ signal }), 5_000);
  const buffers = useResource("buffers", (signal) => admin.buffers({ signal }), 5_000);
  const toggle = useAction("admin");
  const refresh = useAction("admin");
  const [confirming, setConfirming] = useState<Switch | null>(null);
  const { deny } = useContext(PermissionsContext);
  // The switches are for admins only: a refusal to read them means admin actions will fail too.
  const forbidden = state.error?.status === 403;
  useEffect(() => {
    if (forbidden) deny("admin");
  }, [forbidden, deny]);

  function flip(which: Switch, enabled: boolean) {
    setConfirming(null);
    void toggle.run(
      (): Promise<unknown> =>
        which === "push" ? admin.setMaintenance(enabled) : admin.setPopMaintenance(enabled),
      () => `${which === "push" ? "Push" : "Pop"} maintenance turned ${enabled ? "on" : "off"}.`,
      state.reload,
    );
  }

  return (
    <>
      <PageHeader
        title="Maintenance"
        subtitle="Cluster-wide switches; every instance applies them within a second"
      />
      <ActionResult action={toggle} />
      {confirming && (
        <ConfirmDialog
          title={`Turn ${confirming} maintenance on?`}
          confirmLabel="Turn on"
          danger
          onCancel={() => setConfirming(null)}
          onConfirm={() => flip(confirming, true)}
        >
          {confirming === "push"
            ? "Every push is written to the instances' failover buffers instead of PostgreSQL, and replayed in order when maintenance ends."
            : "Every pop on every instance answers empty at once, and parked long-polls are released. Consumers stop receiving messages until it ends."}
        </ConfirmDialog>
      )}
      <Panel title="Switches" testId="switches">
        <Loaded resource={state} lines={4}>
          {(s) => (
            <>
              <SwitchRow
                title="Push maintenance"
                description="Pushes are buffered on disk by each instance and replayed when it ends."
                on={s.maintenanceMode}
                onToggle={() => (s.maintenanceMode ? flip("push", false) : setConfirming("push"))}
                busy={toggle.busy}
                testId="push-switch"
              />
              <SwitchRow
                title="Pop maintenance"
                description="Pops answer empty (reason: paused); acks keep working."
                on={s.popMaintenanceMode}
                onToggle={() => (s.popMaintenanceMode ? flip("pop", false) : setConfirming("pop"))}
                busy={toggle.busy}
                testId="pop-switch"
              />
            </>
          )}
        </Loaded>
      </Panel>
      <div class="grid two">
        <Panel title="Failover buffer of this instance" testId="buffer">
          <Loaded resource={buffers} lines={6}>
            {(b) => (
              <Facts
                items={[
                  ["Instance", <code>{b.worker}</code>],
                  [
                    "Database",
                    <Badge tone={b.dbHealthy ? "green" : "red"}>
                      {b.dbHealthy ? "reachable" : "unreachable"}
                    </Badge>,
                  ],
                  ["Pending records", count(b.pending)],
                  ["Failed records", count(b.failed)],
                  ["Corrupt segments", count(b.corrupt)],
                  ["Segments", count(b.segments)],
                  ["Size", bytes(b.bytes)],
                  ["Oldest record", <Time value={b.oldestAt} />],
                  ["Partitions held back", count(b.partitionsBlocked)],
                  ["Note", b.note ?? "—"],
                ]}
              />
            )}
          </Loaded>
        </Panel>
        <Panel title="Dashboard statistics" testId="stats-refresh">
          <p class="muted" style={{ marginTop: 0 }}>
            The counts of the overview and the status feeds are computed by the leader at a fixed interval
            (STATS_INTERVAL_MS). Recompute them now to see the effect of a change at once.
          </p>
          <ActionButton
            level="admin"
            tone="primary"
            action={refresh}
            onClick={() =>
              void refresh.run(
                () => admin.refreshStats(),
                (r) =>
                  "refreshed" in r
                    ? `Statistics refreshed in ${count(r.durationMs)} ms.`
                    : `Skipped: ${r.reason.replace(/_/g, " ")}.`,
              )
            }
            testId="refresh-stats"
          >
            Refresh statistics now
          </ActionButton>
          <ActionResult action={refresh} />
        </Panel>
      </div>
    </>
  );
}

function SwitchRow(props: {
  title: string;
  description: string;
  on: boolean;
  busy: boolean;
  onToggle: () => void;
  testId: string;
}) {
  return (
    <div class="toggle-row" data-testid={props.testId}>
      <div>
        <strong>{props.title}</strong>{" "}
        <Badge tone={props.on ? "amber" : "green"}>{props.on ? "on" : "off"}</Badge>
        <p>{props.description}</p>
      </div>
      <ActionButton
        level="admin"
        tone={props.on ? "primary" : undefined}
        onClick={props.onToggle}
        disabled={props.busy}
      >
        {props.on ? "Turn off" : "Turn on…"}
      </ActionButton>
    </div>
  );
}
