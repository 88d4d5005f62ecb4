import { type ChatMessage, ContextRefusedError, type Model, ModelError } from "./model.js";

/** An endpoint refusing image parts (a 400 to a request with them) costs one failed request: it is sent again without
 * the images (their text references kept), and so is every later request. */
export function withVisionFallback(model: Model, onRefused: (err: ModelError) => void): Model {
  let refused = false;
  return {
    async complete(request) {
      if (!request.messages.some(hasImages)) return model.complete(request);
      if (refused) return model.complete({ ...request, messages: request.messages.map(withoutImages) });
      try {
        return await model.complete(request);
      } catch (err) {
        if (!(err instanceof ModelError) || (err.status !== 400 && err.status !== 415 && err.status !== 422)) throw err;
        // Too long is not "no images": the loop fits the request and asks again.
        if (err instanceof ContextRefusedError) throw err;
        refused = true;
        onRefused(err);
        return model.complete({ ...request, messages: request.messages.map(withoutImages) });
      }
    },
  };
}

function hasImages(message: ChatMessage): boolean {
  return Array.isArray(message.content) && message.content.some((part) => part.type === "image_url");
}

/** The image parts replaced by one line saying so; the text parts keep the paths. */
function withoutImages(message: ChatMessage): ChatMessage {
  if (message.role !== "user" || !Array.isArray(message.content) || !hasImages(message)) return message;
  const text = message.content.flatMap((part) => (part.type === "text" ? [part.text] : []));
  text.push("[the attached image could not be shown: this model endpoint does not accept images]");
  return { role: "user", content: text.join("\n") };
}
