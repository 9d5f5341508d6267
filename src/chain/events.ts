/** Event topics from an ethers Interface: a name the ABI lacks is a programming error, said at once and by name. */
import type { Interface } from "ethers";

/** topic0 of the event `name` in `iface`. */
export function eventTopic(iface: Interface, name: string): string {
  const event = iface.getEvent(name);
  if (!event) throw new Error(`the ABI has no event ${name}`);
  return event.topicHash;
}
