/** Runs tasks one after another per key (a chat), keys side by side; a key's chain is forgotten once it is idle. */
export function inOrderPerKey(): <T>(key: string, task: () => Promise<T>) => Promise<T> {
  const chains = new Map<string, Promise<unknown>>();
  return (key, task) => {
    const run = (chains.get(key) ?? Promise.resolve()).then(task, task);
    chains.set(key, run);
    const forget = () => {
      if (chains.get(key) === run) chains.delete(key);
    };
    run.then(forget, forget);
    return run;
  };
}
