// The console's one entry module: the header (template editor, token)
// on every page, then the page's own module, named by body data-page.

import { initEditor } from './editor.js';
import { askToken, forgetToken, showTokenState, hasToken } from './api.js';
import { initConversations } from './conversations.js';
import { initConversation } from './timeline.js';
import { initChat } from './chat.js';
import { initCalls } from './calls.js';
import { initDiffPage } from './diffpage.js';

const pages = {
  conversations: initConversations,
  conversation: initConversation,
  calls: initCalls,
  chat: initChat,
  diff: initDiffPage,
};

initEditor();
const tokenButton = document.getElementById('token-button');
if (tokenButton) {
  showTokenState();
  tokenButton.addEventListener('click', () => {
    if (hasToken()) forgetToken();
    else askToken().catch(() => {});
  });
}
const init = pages[document.body.dataset.page];
if (init) init();
