/** Runs `pass` one at a time: a call while it runs asks for exactly one more pass right after it, however many calls
 * came. `idle` resolves once no pass runs. */
export function coalesced(pass: () => Promise<void>): { run(): void; idle(): Promise<void> } {
  let running: Promise<void> | undefined;
  let again = false;
  const run = (): void => {
    if (running) {
      again = true;
      return;
    }
    running = pass().finally(() => {
      running = undefined;
      if (again) {
        again = false;
        run();
      }
    });
  };
  const idle = async () => {
    while (running) await running;
  };
  return { run, idle };
}
