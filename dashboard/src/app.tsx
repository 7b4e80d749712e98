/** The shell: sidebar, sign-in when the broker asks for a token, and the pages' routes. */

import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { Link, Route, Switch, useRoute } from "wouter-preact";
import { admin, onUnauthorized, setToken, token } from "./api";
import { Badge } from "./components/ui";
import { duration } from "./format";
import { PermissionsContext, useResource, type ActionLevel } from "./hooks";
import { Login } from "./pages/login";
import { OverviewPage } from "./pages/overview";
import { QueuesPage } from "./pages/queues";
import { QueuePage } from "./pages/queue";
import { GroupsPage } from "./pages/groups";
import { GroupPage } from "./pages/group";
import { MessagesPage } from "./pages/messages";
import { MessagePage } from "./pages/message";
import { DlqPage } from "./pages/dlq";
import { StreamsPage } from "./pages/streams";
import { TracesPage } from "./pages/traces";
import { MaintenancePage } from "./pages/maintenance";
import { NotFoundPage } from "./pages/not-found";

const NAV: { href: string; label: string; icon: string }[] = [
  { href: "/", label: "Overview", icon: "M3 13h8V3H3zm0 8h8v-6H3zm10 0h8V11h-8zm0-18v6h8V3z" },
  { href: "/queues", label: "Queues", icon: "M4 6h16M4 12h16M4 18h10" },
  {
    href: "/consumer-groups",
    label: "Consumer groups",
    icon: "M8 11a3 3 0 1 0 0-6 3 3 0 0 0 0 6zm8 0a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM2 20c0-3 3-5 6-5s6 2 6 5m2-5c3 0 6 2 6 5",
  },
  { href: "/messages", label: "Messages", icon: "M4 5h16v11H8l-4 4z" },
  { href: "/dlq", label: "Dead letters", icon: "M12 3l9 16H3zM12 10v4m0 3v.5" },
  { href: "/traces", label: "Traces", icon: "M4 18l5-6 4 3 7-9" },
  { href: "/stream-queries", label: "Streams", icon: "M3 7h13l-3-3m3 3l-3 3M21 17H8l3-3m-3 3l3 3" },
  { href: "/maintenance", label: "Maintenance", icon: "M14 7l3-3 3 3-3 3m-3-3L5 16l-1 4 4-1 9-9" },
];

export function App() {
  const [needLogin, setNeedLogin] = useState(false);
  const [session, setSession] = useState(0);
  const [denied, setDenied] = useState<Record<ActionLevel, boolean>>({ write: false, admin: false });
  useEffect(() => onUnauthorized(() => setNeedLogin(true)), []);
  const deny = useCallback((level: ActionLevel) => setDenied((d) => ({ ...d, [level]: true })), []);
  const permissions = useMemo(() => ({ denied, deny }), [denied, deny]);

  if (needLogin)
    return (
      <Login
        refused={token() !== ""}
        onSignedIn={() => {
          setNeedLogin(false);
          setDenied({ write: false, admin: false });
          setSession((s) => s + 1);
        }}
      />
    );
  return (
    <PermissionsContext.Provider value={permissions}>
      <div class="shell" key={session}>
        <Sidebar
          onSignOut={() => {
            setToken("");
            setNeedLogin(true);
          }}
        />
        <main class="main">
          {(denied.write || denied.admin) && (
            <div class="notice warning" role="alert" data-testid="permissions-banner">
              <strong>Insufficient permissions.</strong> Your token may not{" "}
              {denied.write ? "change anything" : "run administrative actions"}; those actions are disabled.
            </div>
          )}
          <Switch>
            <Route path="/" component={OverviewPage} />
            <Route path="/queues" component={QueuesPage} />
            <Route path="/queues/:name">{(p) => <QueuePage name={p.name} />}</Route>
            <Route path="/consumer-groups" component={GroupsPage} />
            <Route path="/consumer-groups/:name">{(p) => <GroupPage name={p.name} />}</Route>
            <Route path="/messages" component={MessagesPage} />
            <Route path="/messages/:partitionId/:transactionId">
              {(p) => <MessagePage partitionId={p.partitionId} transactionId={p.transactionId} />}
            </Route>
            <Route path="/dlq" component={DlqPage} />
            <Route path="/traces">{() => <TracesPage />}</Route>
            <Route path="/traces/:name">{(p) => <TracesPage name={p.name} />}</Route>
            <Route path="/stream-queries" component={StreamsPage} />
            <Route path="/maintenance" component={MaintenancePage} />
            <Route component={NotFoundPage} />
          </Switch>
        </main>
      </div>
    </PermissionsContext.Provider>
  );
}

function Sidebar(props: { onSignOut: () => void }) {
  return (
    <nav class="sidebar" aria-label="Main">
      <Link href="/" class="brand">
        <span class="brand-mark">R</span>
        <span>Regina</span>
      </Link>
      <ul class="nav">
        {NAV.map((item) => (
          <NavItem key={item.href} {...item} />
        ))}
      </ul>
      <HealthStrip />
      {token() && (
        <button type="button" class="button small ghost signout" onClick={props.onSignOut}>
          Sign out
        </button>
      )}
    </nav>
  );
}

function NavItem(props: { href: string; label: string; icon: string }) {
  const [exact] = useRoute(props.href);
  const [nested] = useRoute(`${props.href}/*`);
  const active = exact || (props.href !== "/" && nested);
  return (
    <li>
      <Link
        href={props.href}
        class={`nav-link ${active ? "active" : ""}`}
        aria-current={active ? "page" : undefined}
      >
        <svg viewBox="0 0 24 24" aria-hidden="true">
          <path d={props.icon} />
        </svg>
        {props.label}
      </Link>
    </li>
  );
}

/** This instance's health and the maintenance switches, at the foot of the sidebar. */
function HealthStrip() {
  const health = useResource("health", (signal) => admin.health({ signal }), 10_000);
  const h = health.data;
  let body: ComponentChildren;
  if (health.error && !h) body = <Badge tone="red">unreachable</Badge>;
  else if (!h) body = <span class="muted">…</span>;
  else
    body = (
      <>
        <div class="health-line">
          <Badge>{h.status}</Badge>
          <span class="muted">v{h.version}</span>
        </div>
        <div class="health-worker" title="Instance that answered">
          {h.worker_id}
        </div>
        <div class="muted">up {duration(h.uptimeSeconds)}</div>
        {h.maintenanceMode && <Badge tone="amber">push maintenance</Badge>}
        {h.popMaintenanceMode && <Badge tone="amber">pop maintenance</Badge>}
      </>
    );
  return (
    <div class="health" data-testid="health">
      {body}
    </div>
  );
}
