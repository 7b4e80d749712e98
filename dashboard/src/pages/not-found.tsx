import { Link } from "wouter-preact";
import { Empty, PageHeader } from "../components/ui";

export function NotFoundPage() {
  return (
    <>
      <PageHeader title="Page not found" />
      <Empty>
        Nothing lives at this address. <Link href="/">Back to the overview</Link>.
      </Empty>
    </>
  );
}
