<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="de_DE">
<context>
    <name>QObject</name>
    <message>
        <location filename="../gui/runs/run_controller.cpp" line="+30"/>
        <source>cannot write &apos;%1&apos;: %2</source>
        <translation>&apos;%1&apos; kann nicht geschrieben werden: %2</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>cannot write &apos;%1&apos;</source>
        <translation>&apos;%1&apos; kann nicht geschrieben werden</translation>
    </message>
    <message>
        <location filename="../gui/runs/checkpoint_jobs.cpp" line="+21"/>
        <source>the engine crashed</source>
        <translation>die Engine ist abgestürzt</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>the engine exited with code %1</source>
        <translation>die Engine endete mit Code %1</translation>
    </message>
    <message>
        <location line="+183"/>
        <source>&apos;%1&apos; is not a checkpoint folder name (step_ and 8 digits): nothing was deleted</source>
        <translation>„%1“ ist kein Name eines Checkpoint-Ordners (step_ und 8 Ziffern): nichts wurde gelöscht</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>%1 does not exist (already deleted or pruned)</source>
        <translation>%1 existiert nicht (schon gelöscht oder aufgeräumt)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>%1 is a symbolic link, not a checkpoint folder: nothing was deleted</source>
        <translation>%1 ist ein symbolischer Link, kein Checkpoint-Ordner: nichts wurde gelöscht</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>%1 is not a folder: nothing was deleted</source>
        <translation>%1 ist kein Ordner: nichts wurde gelöscht</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>cannot delete %1: %2</source>
        <translation>%1 kann nicht gelöscht werden: %2</translation>
    </message>
    <message>
        <location filename="../gui/app/main.cpp" line="+79"/>
        <source>TrainDeck</source>
        <translation>TrainDeck</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>TrainDeck stopped unexpectedly the last time it ran. What it noted:

%1
Everything the store had saved is kept. The note is in %2.seen.</source>
        <translation>TrainDeck wurde beim letzten Mal unerwartet beendet. Was es festgehalten hat:

%1
Alles, was die Datenbank gespeichert hatte, bleibt erhalten. Die Notiz liegt in %2.seen.</translation>
    </message>
</context>
<context>
    <name>td::gui</name>
    <message>
        <location filename="../gui/plan/format.cpp" line="+47"/>
        <source>0 s</source>
        <translation>0 s</translation>
    </message>
    <message>
        <location line="+12"/>
        <location line="+7"/>
        <location line="+2"/>
        <source>%1 s</source>
        <translation>%1 s</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1 min %2 s</source>
        <translation>%1 min %2 s</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1 h %2 min</source>
        <translation>%1 h %2 min</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1 d %2 h</source>
        <translation>%1 T %2 h</translation>
    </message>
    <message>
        <location filename="../gui/cluster/node_access.cpp" line="+33"/>
        <source>%1: cancelled</source>
        <translation>%1: abgebrochen</translation>
    </message>
    <message>
        <location filename="../gui/runs/remote_run_job.cpp" line="+177"/>
        <location filename="../gui/runs/slurm_target.cpp" line="+79"/>
        <source>preparing the engine bundle</source>
        <translation>Engine-Paket wird vorbereitet</translation>
    </message>
    <message>
        <location line="+13"/>
        <location line="+26"/>
        <location filename="../gui/runs/slurm_target.cpp" line="+9"/>
        <source>connecting to %1</source>
        <translation>Verbindung zu %1 wird hergestellt</translation>
    </message>
    <message>
        <location line="-50"/>
        <source>uploading the engine and the dataset</source>
        <translation>Engine und Datensatz werden hochgeladen</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>waiting for another deploy to %1</source>
        <translation>eine andere Bereitstellung auf %1 wird abgewartet</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>resuming the engine on the node</source>
        <translation>Engine wird auf dem Knoten fortgesetzt</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>starting the engine on the node</source>
        <translation>Engine wird auf dem Knoten gestartet</translation>
    </message>
    <message>
        <location line="+17"/>
        <location line="+9"/>
        <source>uploading the engine and the dataset to %1 (node %2 of %3)</source>
        <translation>Engine und Datensatz werden auf %1 hochgeladen (Knoten %2 von %3)</translation>
    </message>
    <message>
        <location line="-5"/>
        <source>resuming the ranks on %1</source>
        <translation>Ranks werden auf %1 fortgesetzt</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>starting the ranks on %1</source>
        <translation>Ranks werden auf %1 gestartet</translation>
    </message>
    <message>
        <location line="+58"/>
        <location filename="../gui/runs/slurm_target.cpp" line="+46"/>
        <source>deploy cancelled</source>
        <translation>Bereitstellung abgebrochen</translation>
    </message>
    <message>
        <location line="+77"/>
        <source>connecting</source>
        <translation>Verbindung wird hergestellt</translation>
    </message>
    <message>
        <location line="+40"/>
        <location line="+7"/>
        <location filename="../gui/runs/slurm_target.cpp" line="+98"/>
        <source>stopping</source>
        <translation>wird angehalten</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>connected</source>
        <translation>verbunden</translation>
    </message>
    <message>
        <location line="+38"/>
        <source>ended</source>
        <translation>beendet</translation>
    </message>
    <message>
        <location line="+14"/>
        <location filename="../gui/runs/slurm_target.cpp" line="+57"/>
        <source>reconnecting (attempt %1): %2</source>
        <translation>erneuter Verbindungsaufbau (Versuch %1): %2</translation>
    </message>
    <message>
        <location filename="../gui/plan/run_plan.cpp" line="+21"/>
        <source>The run has not started yet: no config to plan.</source>
        <translation>Der Lauf hat noch nicht begonnen: keine Konfiguration zum Planen.</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>This version cannot plan the run&apos;s config: %1</source>
        <translation>Diese Version kann die Konfiguration des Laufs nicht planen: %1</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Memory per rank (GPU peak)</source>
        <translation>Speicher pro Rank (GPU-Spitze)</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Memory per rank (peak RSS)</source>
        <translation>Speicher pro Rank (RSS-Spitze)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tokens per second</source>
        <translation>Tokens pro Sekunde</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Collective bytes per step and rank</source>
        <translation>Kollektiv-Bytes pro Schritt und Rank</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Bus bandwidth (needed to hide / reached)</source>
        <translation>Busbandbreite (zum Verbergen nötig / erreicht)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Storage read bandwidth per rank (needed / reached)</source>
        <translation>Lesebandbreite des Datenträgers pro Rank (nötig / erreicht)</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>%1B/s</source>
        <translation>%1B/s</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1 tokens/s</source>
        <translation>%1 tokens/s</translation>
    </message>
    <message>
        <location filename="../gui/runs/slurm_target.cpp" line="-195"/>
        <source>uploading to %1</source>
        <translation>lade nach %1 hoch</translation>
    </message>
    <message>
        <location line="+112"/>
        <source>job %1 running</source>
        <translation>Job %1 läuft</translation>
    </message>
    <message>
        <location line="+37"/>
        <location line="+5"/>
        <source>job %1 on %2</source>
        <translation>Job %1 auf %2</translation>
    </message>
    <message>
        <location line="+209"/>
        <source>Run %1: its stored Slurm cluster is unreadable: %2</source>
        <translation>Lauf %1: Sein gespeicherter Slurm-Cluster ist nicht lesbar: %2</translation>
    </message>
</context>
<context>
    <name>td::gui::AboutDialog</name>
    <message>
        <location filename="../gui/look/about_dialog.cpp" line="+64"/>
        <source>About TrainDeck</source>
        <translation>Über TrainDeck</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>A desktop workbench for training your own language models.</source>
        <translation>Eine Desktop-Werkbank zum Trainieren eigener Sprachmodelle.</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Documentation</source>
        <translation>Dokumentation</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Qt:</source>
        <translation>Qt:</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>%1 (built with %2)</source>
        <translation>%1 (erstellt mit %2)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>QCustomPlot:</source>
        <translation>QCustomPlot:</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>SQLite:</source>
        <translation>SQLite:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>System:</source>
        <translation>System:</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>TrainDeck is free software, licensed under the GNU General Public License version 3 or later (it links QCustomPlot, GPLv3; Qt is used under the LGPLv3).</source>
        <translation>TrainDeck ist freie Software unter der GNU General Public License, Version 3 oder neuer (es bindet QCustomPlot ein, GPLv3; Qt wird unter der LGPLv3 verwendet).</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>&amp;Copy versions</source>
        <translation>Versionen &amp;kopieren</translation>
    </message>
</context>
<context>
    <name>td::gui::AlertNotifier</name>
    <message>
        <location filename="../gui/runs/alert_watch.cpp" line="+82"/>
        <source>Non-finite loss or gradient</source>
        <translation>Nicht endlicher Verlust oder Gradient</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Loss spike</source>
        <translation>Verlustspitze</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Throughput drop</source>
        <translation>Durchsatzeinbruch</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Stall (no step)</source>
        <translation>Stillstand (kein Schritt)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Disk nearly full</source>
        <translation>Festplatte fast voll</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Rank or node lost</source>
        <translation>Rang oder Knoten verloren</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Connection lost</source>
        <translation>Verbindung verloren</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Run ended</source>
        <translation>Lauf beendet</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>TrainDeck: %1 — %2</source>
        <translation>TrainDeck: %1 — %2</translation>
    </message>
    <message>
        <location line="+37"/>
        <source>(+%1 more alerts of this kind)</source>
        <translation>(+%1 weitere Warnungen dieser Art)</translation>
    </message>
</context>
<context>
    <name>td::gui::ChartView</name>
    <message>
        <location filename="../gui/charts/chart_view.cpp" line="+140"/>
        <source>step</source>
        <translation>Schritt</translation>
    </message>
    <message>
        <location line="-56"/>
        <location line="+62"/>
        <location line="+509"/>
        <location line="+1"/>
        <source>No run selected.</source>
        <translation>Kein Lauf ausgewählt.</translation>
    </message>
    <message>
        <location line="-395"/>
        <source> rank %1</source>
        <translation> Rank %1</translation>
    </message>
    <message>
        <location line="+0"/>
        <source> rank %1 (%2)</source>
        <translation> Rank %1 (%2)</translation>
    </message>
    <message>
        <location line="-121"/>
        <source>tokens</source>
        <translation>Tokens</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>elapsed time (h:m:s)</source>
        <translation>verstrichene Zeit (h:m:s)</translation>
    </message>
    <message>
        <location line="+584"/>
        <source>%1: %2 at step %3</source>
        <translation>%1: %2 bei Schritt %3</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>%1: steps %2-%3 (%4 values): min %5 at step %6, max %7 at step %8, mean %9</source>
        <translation>%1: Schritte %2-%3 (%4 Werte): Min. %5 bei Schritt %6, Max. %7 bei Schritt %8, Mittel %9</translation>
    </message>
    <message>
        <location line="+14"/>
        <source> · %1: %2</source>
        <translation> · %1: %2</translation>
    </message>
</context>
<context>
    <name>td::gui::CheckpointsTab</name>
    <message>
        <location filename="../gui/app/checkpoints_tab.cpp" line="+35"/>
        <source>%1 GB</source>
        <translation>%1 GB</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1 MB</source>
        <translation>%1 MB</translation>
    </message>
    <message>
        <location line="+67"/>
        <source>Deleted %1.</source>
        <translation>%1 gelöscht.</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Step</source>
        <translation>Schritt</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Size</source>
        <translation>Größe</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Written</source>
        <translation>Geschrieben</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Kept</source>
        <translation>Behalten</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>On disk</source>
        <translation>Auf der Platte</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>A kept checkpoint is never deleted when the run prunes old ones (train.keep_checkpoints)</source>
        <translation>Ein behaltener Checkpoint wird nie gelöscht, wenn der Lauf alte aufräumt (train.keep_checkpoints)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete…</source>
        <translation>Löschen…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete this checkpoint&apos;s folder from the disk</source>
        <translation>Den Ordner dieses Checkpoints von der Platte löschen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Generate…</source>
        <translation>Generieren…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Generate text from this checkpoint (the engine&apos;s sample)</source>
        <translation>Text aus diesem Checkpoint generieren (sample der Engine)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Export for Hugging Face…</source>
        <translation>Für Hugging Face exportieren…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Write this checkpoint as a Hugging Face GPT-2 model folder (the engine&apos;s export)</source>
        <translation>Diesen Checkpoint als Hugging-Face-GPT-2-Modellordner schreiben (export der Engine)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Refresh</source>
        <translation>Aktualisieren</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>Checkpoints on the run&apos;s node; Generate and Export download the chosen one first.</source>
        <translation>Checkpoints auf dem Knoten des Laufs; Generieren und Exportieren laden den gewählten zuerst herunter.</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Downloading %1: %2 of %3 MB</source>
        <translation>Lade %1 herunter: %2 von %3 MB</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Downloaded %1.</source>
        <translation>%1 heruntergeladen.</translation>
    </message>
    <message>
        <location line="+87"/>
        <location line="+108"/>
        <source>This run&apos;s checkpoints are on its node, which is not reachable from this window.</source>
        <translation>Die Checkpoints dieses Laufs liegen auf seinem Knoten, der von diesem Fenster aus nicht erreichbar ist.</translation>
    </message>
    <message>
        <location line="-101"/>
        <source>No checkpoint yet: the run writes one every train.checkpoint_interval steps and when it stops.</source>
        <translation>Noch kein Checkpoint: der Lauf schreibt alle train.checkpoint_interval Schritte einen und wenn er anhält.</translation>
    </message>
    <message>
        <location line="+18"/>
        <source>on the node</source>
        <translation>auf dem Knoten</translation>
    </message>
    <message>
        <location line="+0"/>
        <location line="+2"/>
        <source>yes</source>
        <translation>ja</translation>
    </message>
    <message>
        <location line="-2"/>
        <source>pruned</source>
        <translation>aufgeräumt</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>no</source>
        <translation>nein</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>Unkeep</source>
        <translation>Nicht mehr behalten</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Keep</source>
        <translation>Behalten</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Only a checkpoint on this machine&apos;s disk can be kept.</source>
        <translation>Nur ein Checkpoint auf der Platte dieses Rechners kann behalten werden.</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>Delete the checkpoint of step %1 (%2)? Its folder is removed from the disk.</source>
        <translation>Den Checkpoint von Schritt %1 (%2) löschen? Sein Ordner wird von der Platte entfernt.</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The run is still training and step %1 is its newest checkpoint: a resume after a crash would start from an older one, or from step 0. Delete it anyway?</source>
        <translation>Der Lauf trainiert noch und Schritt %1 ist sein neuester Checkpoint: eine Fortsetzung nach einem Absturz begänne bei einem älteren oder bei Schritt 0. Trotzdem löschen?</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Delete checkpoint</source>
        <translation>Checkpoint löschen</translation>
    </message>
    <message>
        <location line="+53"/>
        <source>Generate from %1 · step %2</source>
        <translation>Aus %1 · Schritt %2 generieren</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Export %1 · step %2 for Hugging Face</source>
        <translation>%1 · Schritt %2 für Hugging Face exportieren</translation>
    </message>
</context>
<context>
    <name>td::gui::ClusterDesigner</name>
    <message>
        <location filename="../gui/cluster/cluster_designer.cpp" line="+93"/>
        <source>Test cancelled.</source>
        <translation>Test abgebrochen.</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Clusters</source>
        <translation>Cluster</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>New cluster</source>
        <translation>Neuer Cluster</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Delete…</source>
        <translation>Löschen…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Remove this cluster from the store (runs made on it stay)</source>
        <translation>Diesen Cluster aus der Datenbank entfernen (die darauf ausgeführten Läufe bleiben erhalten)</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>&lt;b&gt;This machine&lt;/b&gt;&lt;br&gt;Runs train on this computer, on its GPUs where the engine has CUDA, else on its CPU. There is nothing to configure.&lt;br&gt;&lt;br&gt;To train on servers over SSH, press &lt;i&gt;New cluster&lt;/i&gt;.</source>
        <translation>&lt;b&gt;Dieser Rechner&lt;/b&gt;&lt;br&gt;Läufe trainieren auf diesem Computer, auf seinen GPUs, wenn die Engine CUDA unterstützt, sonst auf seiner CPU. Hier gibt es nichts einzustellen.&lt;br&gt;&lt;br&gt;Um über SSH auf Servern zu trainieren, drücken Sie &lt;i&gt;Neuer Cluster&lt;/i&gt;.</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>a name for this cluster, e.g. lab</source>
        <translation>ein Name für diesen Cluster, z. B. labor</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Name:</source>
        <translation>Name:</translation>
    </message>
    <message>
        <location line="+23"/>
        <source>Add node</source>
        <translation>Knoten hinzufügen</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Duplicate</source>
        <translation>Duplizieren</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Remove</source>
        <translation>Entfernen</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Key file…</source>
        <translation>Schlüsseldatei…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Choose the private key of the selected node (its auth becomes &quot;key file&quot;)</source>
        <translation>Den privaten Schlüssel des ausgewählten Knotens wählen (seine Anmeldung wird auf „Schlüsseldatei“ gestellt)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Test connection</source>
        <translation>Verbindung testen</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Connect to the selected node, check its host key and report what it offers</source>
        <translation>Mit dem ausgewählten Knoten verbinden, seinen Hostschlüssel prüfen und melden, was er bietet</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Test all</source>
        <translation>Alle testen</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Cancel tests</source>
        <translation>Tests abbrechen</translation>
    </message>
    <message>
        <location line="+280"/>
        <source>Select a node and press Test connection: its OS, CPUs, memory, free disk in the work directory, glibc and GPUs appear here.</source>
        <translation>Wählen Sie einen Knoten und drücken Sie „Verbindung testen“: Sein Betriebssystem, seine CPUs, sein Speicher, der freie Plattenplatz im Arbeitsverzeichnis, glibc und seine GPUs erscheinen hier.</translation>
    </message>
    <message>
        <location line="-239"/>
        <source>Revert</source>
        <translation>Zurücksetzen</translation>
    </message>
    <message>
        <location line="-75"/>
        <source>SSH nodes</source>
        <translation>SSH-Knoten</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Slurm cluster</source>
        <translation>Slurm-Cluster</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>SSH nodes: runs start on the nodes themselves. Slurm cluster: runs are submitted with sbatch through its login node</source>
        <translation>SSH-Knoten: Läufe starten direkt auf den Knoten. Slurm-Cluster: Läufe werden mit sbatch über den Login-Knoten eingereicht</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Kind:</source>
        <translation>Art:</translation>
    </message>
    <message>
        <location line="+36"/>
        <source>Container of the selected node</source>
        <translation>Container des ausgewählten Knotens</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Slurm</source>
        <translation>Slurm</translation>
    </message>
    <message>
        <location line="+31"/>
        <source>Save</source>
        <translation>Speichern</translation>
    </message>
    <message>
        <location line="+81"/>
        <source>Train on this computer (not editable)</source>
        <translation>Auf diesem Computer trainieren (nicht bearbeitbar)</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Slurm cluster through the login node %1</source>
        <translation>Slurm-Cluster über den Login-Knoten %1</translation>
    </message>
    <message numerus="yes">
        <location line="+2"/>
        <source>%n node(s)</source>
        <translation>
            <numerusform>%n Knoten</numerusform>
            <numerusform>%n Knoten</numerusform>
        </translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Some saved clusters cannot be read: %1</source>
        <translation>Einige gespeicherte Cluster können nicht gelesen werden: %1</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Unsaved changes</source>
        <translation>Ungespeicherte Änderungen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The cluster &quot;%1&quot; has unsaved changes.</source>
        <translation>Der Cluster „%1“ hat ungespeicherte Änderungen.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Save them before you switch?</source>
        <translation>Vor dem Wechseln speichern?</translation>
    </message>
    <message>
        <location line="+44"/>
        <source>New cluster: name it, fill in its nodes, then Save.</source>
        <translation>Neuer Cluster: Geben Sie ihm einen Namen, tragen Sie seine Knoten ein und drücken Sie dann „Speichern“.</translation>
    </message>
    <message>
        <location line="+79"/>
        <source>Press Test connection: the login node&apos;s OS, CPUs, memory, free disk in the shared work directory and glibc, and what sinfo says about the partition appear here.</source>
        <translation>Drücken Sie „Verbindung testen“: Betriebssystem, CPUs, Arbeitsspeicher, freier Platz im gemeinsamen Arbeitsverzeichnis und glibc des Login-Knotens sowie das, was sinfo über die Partition meldet, erscheinen hier.</translation>
    </message>
    <message>
        <location line="+27"/>
        <source>the cluster has no node: add one (a cluster without nodes is this machine)</source>
        <translation>der Cluster hat keinen Knoten: Fügen Sie einen hinzu (ein Cluster ohne Knoten ist dieser Rechner)</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>a cluster called &quot;%1&quot; exists already: choose another name</source>
        <translation>ein Cluster namens „%1“ existiert bereits: Wählen Sie einen anderen Namen</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Save this cluster in the store (never any password or passphrase)</source>
        <translation>Diesen Cluster in der Datenbank speichern (niemals Passwörter oder Passphrasen)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Fix the problems listed above first</source>
        <translation>Beheben Sie zuerst die oben aufgeführten Probleme</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>A Slurm cluster has one node: its login node</source>
        <translation>Ein Slurm-Cluster hat genau einen Knoten: seinen Login-Knoten</translation>
    </message>
    <message>
        <location line="+23"/>
        <source>Private key file</source>
        <translation>Private Schlüsseldatei</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Private keys (id_* *.pem *.key);;All files (*)</source>
        <translation>Private Schlüssel (id_* *.pem *.key);;Alle Dateien (*)</translation>
    </message>
    <message>
        <location line="+14"/>
        <location line="+20"/>
        <source>Not saved: %1</source>
        <translation>Nicht gespeichert: %1</translation>
    </message>
    <message>
        <location line="-5"/>
        <source>Saved %1.</source>
        <translation>%1 gespeichert.</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Saving…</source>
        <translation>Wird gespeichert…</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Reverted to the saved %1.</source>
        <translation>Auf den gespeicherten Stand von %1 zurückgesetzt.</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Delete cluster</source>
        <translation>Cluster löschen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Remove the cluster &quot;%1&quot; from this store?

Runs made on it stay; nothing on its nodes is touched.</source>
        <translation>Den Cluster „%1“ aus dieser Datenbank entfernen?

Die darauf ausgeführten Läufe bleiben erhalten; auf seinen Knoten wird nichts verändert.</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Deleted %1.</source>
        <translation>%1 gelöscht.</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Connecting to %1…</source>
        <translation>Verbindung zu %1 wird hergestellt…</translation>
    </message>
    <message>
        <location line="+27"/>
        <source>%1: connected
%2</source>
        <translation>%1: verbunden
%2</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>%1: FAILED
%2</source>
        <translation>%1: FEHLGESCHLAGEN
%2</translation>
    </message>
</context>
<context>
    <name>td::gui::ClusterList</name>
    <message>
        <location filename="../gui/cluster/cluster_list.cpp" line="+19"/>
        <source>This machine</source>
        <translation>Dieser Rechner</translation>
    </message>
    <message>
        <location line="+24"/>
        <source>%1: %2</source>
        <translation>%1: %2</translation>
    </message>
</context>
<context>
    <name>td::gui::CompareModel</name>
    <message>
        <location filename="../gui/compare/compare_model.cpp" line="+59"/>
        <source>Could not compare the runs: %1</source>
        <translation>Die Läufe konnten nicht verglichen werden: %1</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Not in this store (deleted, or another store file is open): %1</source>
        <translation>Nicht in dieser Datenbank (gelöscht, oder eine andere Datenbankdatei ist geöffnet): %1</translation>
    </message>
</context>
<context>
    <name>td::gui::CompareSummaryModel</name>
    <message>
        <location filename="../gui/compare/summary_model.cpp" line="+77"/>
        <source> so far</source>
        <translation> bisher</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>not recorded for this run</source>
        <translation>für diesen Lauf nicht aufgezeichnet</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>run</source>
        <translation>Lauf</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>experiment</source>
        <translation>Experiment</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>status</source>
        <translation>Status</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>final loss</source>
        <translation>finaler Verlust</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>best loss</source>
        <translation>bester Verlust</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>final val_loss</source>
        <translation>finaler val_loss</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>best val_loss</source>
        <translation>bester val_loss</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>tokens/s (median of last %1 steps)</source>
        <translation>tokens/s (Median der letzten %1 Schritte)</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Median tokens/s of the last %1 steps, each attempt&apos;s first %2 (warm-up) left out</source>
        <translation>Median der tokens/s der letzten %1 Schritte, ohne die ersten %2 jedes Versuchs (Aufwärmphase)</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Median model FLOPs utilisation of the last %1 steps, each attempt&apos;s first %2 left out</source>
        <translation>Median der Modell-FLOPs-Auslastung (MFU) der letzten %1 Schritte, ohne die ersten %2 jedes Versuchs</translation>
    </message>
    <message>
        <location line="-19"/>
        <source>MFU</source>
        <translation>MFU</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>wall time</source>
        <translation>Laufzeit</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>tokens seen</source>
        <translation>gesehene Tokens</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>parameters</source>
        <translation>Parameter</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>steps</source>
        <translation>Schritte</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Training loss (nats/token) at the last step</source>
        <translation>Trainingsverlust (nats/Token) beim letzten Schritt</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Lowest training loss (nats/token)</source>
        <translation>Niedrigster Trainingsverlust (nats/Token)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Validation loss (nats/token) of the last evaluation</source>
        <translation>Validierungsverlust (nats/Token) der letzten Evaluierung</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Lowest validation loss (nats/token)</source>
        <translation>Niedrigster Validierungsverlust (nats/Token)</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Sum of the attempts&apos; durations (pauses between a stop and a resume not counted)</source>
        <translation>Summe der Dauern aller Versuche (Pausen zwischen Anhalten und Fortsetzen nicht mitgezählt)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tokens trained on, at the last step</source>
        <translation>Trainierte Tokens beim letzten Schritt</translation>
    </message>
</context>
<context>
    <name>td::gui::CompareView</name>
    <message>
        <location filename="../gui/compare/compare_view.cpp" line="+27"/>
        <source>Charts of the compared runs appear here.</source>
        <translation>Diagramme der verglichenen Läufe erscheinen hier.</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Summary</source>
        <translation>Übersicht</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Config diff</source>
        <translation>Konfigurationsunterschiede</translation>
    </message>
    <message>
        <location line="+53"/>
        <location line="+8"/>
        <source>Select two or more runs to compare</source>
        <translation>Wählen Sie zwei oder mehr Läufe zum Vergleichen</translation>
    </message>
    <message>
        <location line="-6"/>
        <source>Loading…</source>
        <translation>Wird geladen…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>1 field is equal (hidden)</source>
        <translation>1 Feld ist gleich (ausgeblendet)</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>%1 fields are equal (hidden)</source>
        <translation>%1 Felder sind gleich (ausgeblendet)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The configs are identical. </source>
        <translation>Die Konfigurationen sind identisch. </translation>
    </message>
</context>
<context>
    <name>td::gui::ConfigDiffModel</name>
    <message>
        <location filename="../gui/compare/config_diff_model.cpp" line="+70"/>
        <source>%1 is not in this run&apos;s config</source>
        <translation>%1 ist nicht in der Konfiguration dieses Laufs</translation>
    </message>
</context>
<context>
    <name>td::gui::ConnectionTester</name>
    <message>
        <location filename="../gui/cluster/connection_tester.cpp" line="+33"/>
        <source>Slurm: %1</source>
        <translation>Slurm: %1</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Slurm: FAILED: %1 (check that sinfo runs on the login node and the partition is right)</source>
        <translation>Slurm: FEHLGESCHLAGEN: %1 (prüfen Sie, ob sinfo auf dem Login-Knoten läuft und die Partition stimmt)</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>No node access is configured (internal error).</source>
        <translation>Es ist kein Knotenzugriff eingerichtet (interner Fehler).</translation>
    </message>
</context>
<context>
    <name>td::gui::ContainerSettings</name>
    <message>
        <location filename="../gui/cluster/container_settings.cpp" line="+30"/>
        <source>%1: (no image)</source>
        <translation>%1: (kein Image)</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>The program on the node that runs the image</source>
        <translation>Das Programm auf dem Knoten, das das Image ausführt</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>empty: the engine bundle, no container (e.g. localhost/traindeck-engine:0.1.0)</source>
        <translation>leer: das Engine-Paket, kein Container (z. B. localhost/traindeck-engine:0.1.0)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>podman/docker: an image present on the node (never pulled at launch); apptainer: a .sif file on the node or a docker:// URI</source>
        <translation>podman/docker: ein Image, das auf dem Knoten vorhanden ist (beim Start nie heruntergeladen); apptainer: eine .sif-Datei auf dem Knoten oder eine docker://-URI</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>host:container[:ro], one a line or comma-separated, e.g. /scratch/corpora:/corpora:ro</source>
        <translation>host:container[:ro], eine pro Zeile oder durch Kommas getrennt, z. B. /scratch/corpora:/corpora:ro</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Extra folders of the node inside the container (the work directory is always mounted at its own path)</source>
        <translation>Weitere Ordner des Knotens im Container (das Arbeitsverzeichnis ist immer unter seinem eigenen Pfad eingebunden)</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Runtime:</source>
        <translation>Laufzeit:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Image:</source>
        <translation>Image:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Extra mounts:</source>
        <translation>Weitere Einbindungen:</translation>
    </message>
</context>
<context>
    <name>td::gui::Dashboard</name>
    <message>
        <location filename="../engine/metrics/step_fields.h" line="+151"/>
        <source>waiting for data</source>
        <translation>Warten auf Daten</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>read throughput</source>
        <translation>Lesedurchsatz</translation>
    </message>
    <message>
        <location line="+82"/>
        <source>write throughput</source>
        <translation>Schreibdurchsatz</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>training paused</source>
        <translation>Training pausiert</translation>
    </message>
    <message>
        <location filename="../gui/charts/dashboard.cpp" line="+184"/>
        <source>Input pipeline</source>
        <translation>Eingabe-Pipeline</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>waiting for data (% of step)</source>
        <translation>Warten auf Daten (% des Schritts)</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>read throughput (MB/s)</source>
        <translation>Lesedurchsatz (MB/s)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>No input figures yet: the run has not completed its first step.</source>
        <translation>Noch keine Eingabewerte: Der Lauf hat seinen ersten Schritt noch nicht abgeschlossen.</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Checkpoints</source>
        <translation>Checkpoints</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>write throughput (MB/s)</source>
        <translation>Schreibdurchsatz (MB/s)</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>training paused (s)</source>
        <translation>Training pausiert (s)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>No checkpoint written yet.</source>
        <translation>Noch kein Checkpoint geschrieben.</translation>
    </message>
    <message>
        <location line="-154"/>
        <source>X axis:</source>
        <translation>X-Achse:</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Step</source>
        <translation>Schritt</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tokens</source>
        <translation>Tokens</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Wall time</source>
        <translation>Verstrichene Zeit</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Smoothing:</source>
        <translation>Glättung:</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Log scale</source>
        <translation>Logarithmische Skala</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Export PNG...</source>
        <translation>PNG exportieren...</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Export CSV...</source>
        <translation>CSV exportieren...</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Points shown...</source>
        <translation>Angezeigte Punkte...</translation>
    </message>
    <message>
        <location line="+22"/>
        <location line="+246"/>
        <source>Export CSV</source>
        <translation>CSV exportieren</translation>
    </message>
    <message>
        <location line="-246"/>
        <source>Could not export to %1: %2</source>
        <translation>Export nach %1 fehlgeschlagen: %2</translation>
    </message>
    <message>
        <location line="+64"/>
        <source>Loss</source>
        <translation>Verlust</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>loss (nats/token)</source>
        <translation>Verlust (nats/Token)</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Memory and CPU</source>
        <translation>Speicher und CPU</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>CPU (% of one core)</source>
        <translation>CPU (% eines Kerns)</translation>
    </message>
    <message>
        <location filename="../engine/metrics/step_fields.h" line="-147"/>
        <source>train loss</source>
        <translation>Trainingsverlust</translation>
    </message>
    <message>
        <location line="+20"/>
        <location line="+96"/>
        <source>process CPU</source>
        <translation>Prozess-CPU</translation>
    </message>
    <message>
        <location line="-90"/>
        <location line="+44"/>
        <source>GPU utilization</source>
        <translation>GPU-Auslastung</translation>
    </message>
    <message>
        <location line="-39"/>
        <location line="+43"/>
        <source>GPU power</source>
        <translation>GPU-Leistung</translation>
    </message>
    <message>
        <location line="+18"/>
        <source>all-reduce bytes</source>
        <translation>All-Reduce-Bytes</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>reduce-scatter bytes</source>
        <translation>Reduce-Scatter-Bytes</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>all-gather bytes</source>
        <translation>All-Gather-Bytes</translation>
    </message>
    <message>
        <location line="+26"/>
        <source>val loss</source>
        <translation>Validierungsverlust</translation>
    </message>
    <message>
        <location filename="../gui/charts/dashboard.cpp" line="-8"/>
        <source>No loss yet: the run has not completed its first step.</source>
        <translation>Noch kein Verlust: Der Lauf hat seinen ersten Schritt noch nicht abgeschlossen.</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Throughput</source>
        <translation>Durchsatz</translation>
    </message>
    <message>
        <location line="+0"/>
        <location filename="../engine/metrics/step_fields.h" line="-121"/>
        <location line="+71"/>
        <source>tokens/s</source>
        <translation>tokens/s</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>MFU (0..1)</source>
        <translation>MFU (0..1)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>No throughput yet: the run has not completed its first step.</source>
        <translation>Noch kein Durchsatz: Der Lauf hat seinen ersten Schritt noch nicht abgeschlossen.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>bytes</source>
        <translation>Bytes</translation>
    </message>
    <message>
        <location filename="../engine/metrics/step_fields.h" line="-65"/>
        <source>process RSS</source>
        <translation>Prozess-RSS</translation>
    </message>
    <message>
        <location line="+28"/>
        <source>GPU memory</source>
        <translation>GPU-Speicher</translation>
    </message>
    <message>
        <location filename="../gui/charts/dashboard.cpp" line="+1"/>
        <source>No memory figures yet: the run reports process RSS at every step (and GPU memory on the CUDA backend).</source>
        <translation>Noch keine Speicherwerte: Der Lauf meldet bei jedem Schritt den Prozess-RSS (und auf dem CUDA-Backend den GPU-Speicher).</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Network</source>
        <translation>Netzwerk</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>bytes per step</source>
        <translation>Bytes pro Schritt</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>bus bandwidth (GB/s)</source>
        <translation>Busbandbreite (GB/s)</translation>
    </message>
    <message>
        <location filename="../engine/metrics/step_fields.h" line="+41"/>
        <source>collective bytes sent</source>
        <translation>gesendete Kollektiv-Bytes</translation>
    </message>
    <message>
        <location line="+27"/>
        <source>bus bandwidth</source>
        <translation>Busbandbreite</translation>
    </message>
    <message>
        <location filename="../gui/charts/dashboard.cpp" line="+1"/>
        <source>No network traffic: single-process runs do not communicate; distributed runs report collective bytes here.</source>
        <translation>Kein Netzwerkverkehr: Läufe mit einem Prozess kommunizieren nicht; verteilte Läufe melden hier ihre Kollektiv-Bytes.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Optimizer</source>
        <translation>Optimierer</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>learning rate</source>
        <translation>Lernrate</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>gradient norm</source>
        <translation>Gradientennorm</translation>
    </message>
    <message>
        <location filename="../engine/metrics/step_fields.h" line="-109"/>
        <source>lr</source>
        <translation>lr</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>grad norm (before clipping)</source>
        <translation>Gradientennorm (vor dem Clipping)</translation>
    </message>
    <message>
        <location filename="../gui/charts/dashboard.cpp" line="+1"/>
        <source>No optimizer figures yet: the run has not completed its first step.</source>
        <translation>Noch keine Optimiererwerte: Der Lauf hat seinen ersten Schritt noch nicht abgeschlossen.</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>utilization (%)</source>
        <translation>Auslastung (%)</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>power (W)</source>
        <translation>Leistung (W)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>No GPU figures: the run reports them on NVIDIA GPUs (NVML, from the driver).</source>
        <translation>Keine GPU-Werte: Der Lauf meldet sie auf NVIDIA-GPUs (NVML, vom Treiber).</translation>
    </message>
    <message>
        <location line="+137"/>
        <source>Export charts as PNG</source>
        <translation>Diagramme als PNG exportieren</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>PNG image (*.png)</source>
        <translation>PNG-Bild (*.png)</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Export PNG</source>
        <translation>PNG exportieren</translation>
    </message>
    <message>
        <location line="+0"/>
        <location line="+9"/>
        <source>Could not write %1: check the folder is writable.</source>
        <translation>%1 konnte nicht geschrieben werden: Prüfen Sie, ob der Ordner beschreibbar ist.</translation>
    </message>
    <message>
        <location line="-4"/>
        <source>Export the points shown as CSV</source>
        <translation>Angezeigte Punkte als CSV exportieren</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+10"/>
        <source>CSV file (*.csv)</source>
        <translation>CSV-Datei (*.csv)</translation>
    </message>
    <message>
        <location line="-1"/>
        <source>Export all metric rows of %1 as CSV</source>
        <translation>Alle Metrikzeilen von %1 als CSV exportieren</translation>
    </message>
    <message>
        <location line="-301"/>
        <source>Exponential moving average of the noisy lines (loss, gradient norm, throughput; weight 0 to 0.99), the unsmoothed line faint behind; learning rate, memory and val loss are never smoothed, nor are stored values, the band and exports.</source>
        <translation>Exponentieller gleitender Mittelwert der verrauschten Linien (Verlust, Gradientennorm, Durchsatz; Gewicht 0 bis 0,99), die ungeglättete Linie blass dahinter; Lernrate, Speicher und Val-Loss werden nie geglättet, ebenso wenig gespeicherte Werte, das Band und Exporte.</translation>
    </message>
    <message>
        <location line="+28"/>
        <source>All rows of the runs shown...</source>
        <translation>Alle Zeilen der gezeigten Läufe...</translation>
    </message>
</context>
<context>
    <name>td::gui::DataPanel</name>
    <message>
        <location filename="../gui/data/data_panel.cpp" line="+63"/>
        <source>Prepare a dataset</source>
        <translation>Datensatz vorbereiten</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Text files (.txt, .md, no extension), JSON Lines (.jsonl) and folders (walked recursively)</source>
        <translation>Textdateien (.txt, .md, ohne Endung), JSON Lines (.jsonl) und Ordner (rekursiv durchsucht)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Add files…</source>
        <translation>Dateien hinzufügen…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Add folder…</source>
        <translation>Ordner hinzufügen…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Remove</source>
        <translation>Entfernen</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Sources:</source>
        <translation>Quellen:</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Byte (257 ids: 256 bytes + end of text)</source>
        <translation>Byte (257 IDs: 256 Bytes + Textende)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>BPE (sentencepiece, trained on the corpus)</source>
        <translation>BPE (sentencepiece, auf dem Korpus trainiert)</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>BPE vocabulary size: ids in all (256 byte pieces, 3 special tokens, merges)</source>
        <translation>BPE-Vokabulargröße: IDs insgesamt (256 Byte-Stücke, 3 Sondertokens, Merges)</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The last fraction of the token stream is kept for validation</source>
        <translation>Der letzte Anteil des Tokenstroms wird für die Validierung zurückgehalten</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>dataset folder to write</source>
        <translation>zu schreibender Datensatzordner</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Browse…</source>
        <translation>Durchsuchen…</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Tokenizer:</source>
        <translation>Tokenizer:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>vocab_size:</source>
        <translation>vocab_size:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>val_fraction:</source>
        <translation>val_fraction:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Output folder:</source>
        <translation>Ausgabeordner:</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Prepare</source>
        <translation>Vorbereiten</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Cancel</source>
        <translation>Abbrechen</translation>
    </message>
    <message>
        <location line="+18"/>
        <source>Registered datasets</source>
        <translation>Registrierte Datensätze</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Name</source>
        <translation>Name</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Tokenizer</source>
        <translation>Tokenizer</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>vocab_size</source>
        <translation>vocab_size</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Train tokens</source>
        <translation>Trainings-Tokens</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Val tokens</source>
        <translation>Validierungs-Tokens</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Folder</source>
        <translation>Ordner</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Forget…</source>
        <translation>Vergessen…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Remove the dataset from this store&apos;s list; its files stay on disk</source>
        <translation>Entfernt den Datensatz aus der Liste dieser Datenbank; seine Dateien bleiben auf der Festplatte</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Use in design</source>
        <translation>Im Entwurf verwenden</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Train the design on this dataset: sets data.path and model.vocab_size to its tokenizer&apos;s</source>
        <translation>Den Entwurf auf diesem Datensatz trainieren: setzt data.path und model.vocab_size auf die seines Tokenizers</translation>
    </message>
    <message>
        <location line="+21"/>
        <source>Add text files</source>
        <translation>Textdateien hinzufügen</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Text (*.txt *.md *.jsonl);;All files (*)</source>
        <translation>Text (*.txt *.md *.jsonl);;Alle Dateien (*)</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Add a folder of text files</source>
        <translation>Ordner mit Textdateien hinzufügen</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Folder to write the dataset in</source>
        <translation>Ordner, in den der Datensatz geschrieben wird</translation>
    </message>
    <message>
        <location line="+101"/>
        <source>Add files or folders to prepare first.</source>
        <translation>Fügen Sie zuerst Dateien oder Ordner zum Vorbereiten hinzu.</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Choose the output folder first.</source>
        <translation>Wählen Sie zuerst den Ausgabeordner.</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Training the BPE tokenizer and encoding…</source>
        <translation>BPE-Tokenizer wird trainiert und der Text kodiert…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Encoding…</source>
        <translation>Wird kodiert…</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Cancelling…</source>
        <translation>Wird abgebrochen…</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>%p% (%1 of %2)</source>
        <translation>%p% (%1 von %2)</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Already prepared from the same files and options: reusing %1.</source>
        <translation>Bereits aus denselben Dateien und Optionen vorbereitet: %1 wird wiederverwendet.</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Prepared %1: %2 train + %3 val tokens.</source>
        <translation>%1 vorbereitet: %2 Trainings- + %3 Validierungs-Tokens.</translation>
    </message>
    <message>
        <location line="+23"/>
        <source>Cancelled: nothing was kept.</source>
        <translation>Abgebrochen: Nichts wurde behalten.</translation>
    </message>
    <message>
        <location line="+84"/>
        <source>The design now trains on %1 (vocab_size %2).</source>
        <translation>Der Entwurf trainiert jetzt auf %1 (vocab_size %2).</translation>
    </message>
    <message>
        <location line="+28"/>
        <source>Forget dataset</source>
        <translation>Datensatz vergessen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Remove %1 from this store&apos;s list of datasets?

Its files stay on disk.</source>
        <translation>%1 aus der Datensatzliste dieser Datenbank entfernen?

Seine Dateien bleiben auf der Festplatte.</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Forgot %1 (its files are still on disk).</source>
        <translation>%1 vergessen (seine Dateien sind noch auf der Festplatte).</translation>
    </message>
</context>
<context>
    <name>td::gui::Dialog</name>
    <message>
        <location filename="../gui/app/checkpoints_tab.cpp" line="-22"/>
        <source>Downloading %1 from the node…</source>
        <translation>Lade %1 vom Knoten herunter…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The checkpoint could not be downloaded: %1</source>
        <translation>Der Checkpoint konnte nicht heruntergeladen werden: %1</translation>
    </message>
</context>
<context>
    <name>td::gui::EstimatePanel</name>
    <message>
        <location filename="../gui/designer/estimate_panel.cpp" line="+21"/>
        <source>Model</source>
        <translation>Modell</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Parameters</source>
        <translation>Parameter</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>without embeddings</source>
        <translation>ohne Embeddings</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Training FLOPs per token</source>
        <translation>Trainings-FLOPs pro Token</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tokens per step</source>
        <translation>Tokens pro Schritt</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>KV cache per sequence</source>
        <translation>KV-Cache pro Sequenz</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Memory per rank (fp32)</source>
        <translation>Speicher pro Rank (fp32)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Weights</source>
        <translation>Gewichte</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Gradients</source>
        <translation>Gradienten</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Optimizer (AdamW m, v)</source>
        <translation>Optimierer (AdamW m, v)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Activations</source>
        <translation>Aktivierungen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Total</source>
        <translation>Gesamt</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>On this machine</source>
        <translation>Auf diesem Rechner</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Tokens per second</source>
        <translation>Tokens pro Sekunde</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Run time</source>
        <translation>Laufzeit</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Calibrate this CPU</source>
        <translation>Diese CPU kalibrieren</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Measures this CPU&apos;s sgemm peak (a few seconds) so that tokens/s can be estimated; the engine caches it for every later run.</source>
        <translation>Misst die sgemm-Spitzenleistung dieser CPU (einige Sekunden), damit tokens/s geschätzt werden können; die Engine speichert sie für alle späteren Läufe.</translation>
    </message>
    <message>
        <location line="+24"/>
        <source>%1 (%2)</source>
        <translation>%1 (%2)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>%1FLOP</source>
        <translation>%1FLOP</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>6 N + 12 L C T (PaLM, appendix B): %1 FLOPs per token, forward and backward</source>
        <translation>6 N + 12 L C T (PaLM, Anhang B): %1 FLOPs pro Token, Vorwärts- und Rückwärtsdurchlauf</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>micro_batch %1 × grad_accum %2 × seq_len %3 (one rank)</source>
        <translation>micro_batch %1 × grad_accum %2 × seq_len %3 (ein Rank)</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Keys and values generation keeps for %1 tokens in bf16: 2 × n_layer × tokens × %2 key/value heads × head size × 2 bytes (%3 per token)</source>
        <translation>Schlüssel und Werte, die die Generierung für %1 Tokens in bf16 vorhält: 2 × n_layer × Tokens × %2 Key/Value-Köpfe × Kopfgröße × 2 Bytes (%3 pro Token)</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>What forward keeps for backward at micro_batch %1, plus backward scratch</source>
        <translation>Was der Vorwärtsdurchlauf bei micro_batch %1 für den Rückwärtsdurchlauf aufbewahrt, plus Zwischenspeicher des Rückwärtsdurchlaufs</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>≈ %1 tokens/s</source>
        <translation>≈ %1 tokens/s</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>≈ %1 for %2 steps</source>
        <translation>≈ %1 für %2 Schritte</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>the median of the last runs here</source>
        <translation>der Median der letzten Läufe hier</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>the engine&apos;s measured share of that peak</source>
        <translation>der gemessene Anteil der Engine an dieser Spitze</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>assumed: calibrate to measure the engine&apos;s share</source>
        <translation>angenommen: Kalibrieren Sie, um den Anteil der Engine zu messen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>sgemm peak %1FLOP/s with %2 threads × MFU %3 (%4) ÷ FLOPs per token; training steps only (evaluations and samples add to it)</source>
        <translation>sgemm-Spitze %1FLOP/s mit %2 Threads × MFU %3 (%4) ÷ FLOPs pro Token; nur Trainingsschritte (Evaluierungen und Samples kommen hinzu)</translation>
    </message>
    <message>
        <location line="+7"/>
        <location line="+1"/>
        <source>not calibrated</source>
        <translation>nicht kalibriert</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>This CPU&apos;s peak with %1 threads is not measured yet: calibrate it to estimate tokens/s.</source>
        <translation>Die Spitzenleistung dieser CPU mit %1 Threads ist noch nicht gemessen: Kalibrieren Sie sie, um tokens/s zu schätzen.</translation>
    </message>
    <message>
        <location line="+21"/>
        <source>Fix the marked fields to update the estimates (the figures shown are of the last valid config).</source>
        <translation>Korrigieren Sie die markierten Felder, um die Schätzungen zu aktualisieren (die angezeigten Werte gehören zur letzten gültigen Konfiguration).</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The estimates are valid; choose a dataset (data.path) before a run.</source>
        <translation>Die Schätzungen sind gültig; wählen Sie vor einem Lauf einen Datensatz (data.path).</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Calibrating this CPU (a few seconds)…</source>
        <translation>Diese CPU wird kalibriert (einige Sekunden)…</translation>
    </message>
</context>
<context>
    <name>td::gui::ExperimentsModel</name>
    <message>
        <location filename="../gui/runs/experiments_model.cpp" line="+71"/>
        <location line="+6"/>
        <source>An experiment needs a name.</source>
        <translation>Ein Experiment braucht einen Namen.</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>Experiment %1 holds run %2, which is running: stop it before deleting.</source>
        <translation>Experiment %1 enthält den Lauf %2, der gerade läuft: Halten Sie ihn vor dem Löschen an.</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Run %1 is running: stop it before deleting.</source>
        <translation>Lauf %1 läuft gerade: Halten Sie ihn vor dem Löschen an.</translation>
    </message>
    <message numerus="yes">
        <location line="+81"/>
        <source>%n run(s)</source>
        <translation>
            <numerusform>%n Lauf</numerusform>
            <numerusform>%n Läufe</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location line="+16"/>
        <source>%n new alert(s): open the run to see them</source>
        <translation>
            <numerusform>%n neuer Alarm: den Lauf öffnen, um ihn zu sehen</numerusform>
            <numerusform>%n neue Alarme: den Lauf öffnen, um sie zu sehen</numerusform>
        </translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Median tokens/s of the last %1 steps</source>
        <translation>Median der tokens/s der letzten %1 Schritte</translation>
    </message>
    <message>
        <location line="+18"/>
        <source>%1 ⚠ %2</source>
        <translation>%1 ⚠ %2</translation>
    </message>
    <message>
        <location line="+26"/>
        <source>Name</source>
        <translation>Name</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Status</source>
        <translation>Status</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Started</source>
        <translation>Gestartet</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Best val loss</source>
        <translation>Bester Val-Verlust</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tokens/s</source>
        <translation>Tokens/s</translation>
    </message>
    <message>
        <location line="-45"/>
        <source>Run %1</source>
        <translation>Lauf %1</translation>
    </message>
</context>
<context>
    <name>td::gui::ExportDialog</name>
    <message>
        <location filename="../gui/app/checkpoint_dialogs.cpp" line="+148"/>
        <source>Browse…</source>
        <translation>Durchsuchen…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Folder</source>
        <translation>Ordner</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>A Hugging Face GPT-2 model (config.json, model.safetensors, tokenizer). An earlier export in the folder is replaced; any other non-empty folder is refused.</source>
        <translation>Ein Hugging-Face-GPT-2-Modell (config.json, model.safetensors, Tokenizer). Ein früherer Export im Ordner wird ersetzt; jeder andere nicht leere Ordner wird abgelehnt.</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Export</source>
        <translation>Exportieren</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Open folder</source>
        <translation>Ordner öffnen</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Close</source>
        <translation>Schließen</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Export into</source>
        <translation>Exportieren nach</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>The export failed: %1</source>
        <translation>Der Export ist gescheitert: %1</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Checkpoint %1</source>
        <translation>Checkpoint %1</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Choose a folder to export into.</source>
        <translation>Wählen Sie einen Ordner für den Export.</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Exporting…</source>
        <translation>Exportiere…</translation>
    </message>
</context>
<context>
    <name>td::gui::ExportJob</name>
    <message>
        <location filename="../gui/runs/checkpoint_jobs.cpp" line="-76"/>
        <source>An export is already running.</source>
        <translation>Ein Export läuft bereits.</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>traindeck-engine was not found (set TRAINDECK_ENGINE to its path).</source>
        <translation>traindeck-engine wurde nicht gefunden (setzen Sie TRAINDECK_ENGINE auf seinen Pfad).</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>%1 is not empty and is not an earlier export: choose a new or empty folder.</source>
        <translation>%1 ist nicht leer und kein früherer Export: wählen Sie einen neuen oder leeren Ordner.</translation>
    </message>
    <message>
        <location line="+41"/>
        <source>cannot start %1: %2</source>
        <translation>%1 kann nicht gestartet werden: %2</translation>
    </message>
</context>
<context>
    <name>td::gui::FirstStart</name>
    <message>
        <location filename="../gui/app/first_start.cpp" line="+76"/>
        <source>Welcome: prepare a corpus on the Data page (the fortunes corpus is ready to prepare), then press Start run (Ctrl+R).</source>
        <translation>Willkommen: Bereiten Sie auf der Seite „Daten“ einen Korpus vor (der fortunes-Korpus liegt bereit) und drücken Sie dann „Lauf starten“ (Strg+R).</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Welcome: the demo experiment is ready. Press Start run (Ctrl+R) to train it.</source>
        <translation>Willkommen: Das Demo-Experiment ist bereit. Drücken Sie „Lauf starten“ (Strg+R), um es zu trainieren.</translation>
    </message>
</context>
<context>
    <name>td::gui::GenerateDialog</name>
    <message>
        <location filename="../gui/app/checkpoint_dialogs.cpp" line="-208"/>
        <source>Text to continue (empty: start a new document)</source>
        <translation>Fortzusetzender Text (leer: ein neues Dokument beginnen)</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>0: greedy (always the most likely token)</source>
        <translation>0: gierig (immer das wahrscheinlichste Token)</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Sample among the k most likely tokens (0: all)</source>
        <translation>Unter den k wahrscheinlichsten Tokens wählen (0: alle)</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Prompt</source>
        <translation>Prompt</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tokens</source>
        <translation>Tokens</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Temperature</source>
        <translation>Temperatur</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Top-k</source>
        <translation>Top-k</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Seed</source>
        <translation>Seed</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Generate</source>
        <translation>Generieren</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Stop</source>
        <translation>Anhalten</translation>
    </message>
    <message numerus="yes">
        <location line="+36"/>
        <source>Done: %n character(s).</source>
        <translation>
            <numerusform>Fertig: %n Zeichen.</numerusform>
            <numerusform>Fertig: %n Zeichen.</numerusform>
        </translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Stopped.</source>
        <translation>Angehalten.</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The engine failed: %1</source>
        <translation>Die Engine ist gescheitert: %1</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Checkpoint %1</source>
        <translation>Checkpoint %1</translation>
    </message>
    <message numerus="yes">
        <location line="+28"/>
        <source>Generating %n token(s)…</source>
        <translation>
            <numerusform>Erzeuge %n Token…</numerusform>
            <numerusform>Erzeuge %n Tokens…</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>td::gui::HostKeyDialog</name>
    <message>
        <location filename="../gui/cluster/prompt_dialogs.cpp" line="+19"/>
        <source>Unknown host key</source>
        <translation>Unbekannter Hostschlüssel</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>TrainDeck has not connected to &lt;b&gt;%1&lt;/b&gt; before: its host key is not in %2.&lt;br&gt;Compare the fingerprint below with the node&apos;s &lt;tt&gt;ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub&lt;/tt&gt; before you accept it.</source>
        <translation>TrainDeck war noch nie mit &lt;b&gt;%1&lt;/b&gt; verbunden: Sein Hostschlüssel steht nicht in %2.&lt;br&gt;Vergleichen Sie den Fingerabdruck unten mit der Ausgabe von &lt;tt&gt;ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub&lt;/tt&gt; auf dem Knoten, bevor Sie ihn akzeptieren.</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Key type:</source>
        <translation>Schlüsseltyp:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Fingerprint:</source>
        <translation>Fingerabdruck:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Saved as:</source>
        <translation>Gespeichert als:</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Accept and connect</source>
        <translation>Akzeptieren und verbinden</translation>
    </message>
</context>
<context>
    <name>td::gui::InfraPanel</name>
    <message>
        <location filename="../gui/designer/infra_panel.cpp" line="+68"/>
        <source>Cluster and budget</source>
        <translation>Cluster und Budget</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>A device of the catalogue: the built-in datasheet figures merged with your ~/.config/traindeck/devices.json (docs/planner.md)</source>
        <translation>Ein Gerät aus dem Katalog: die eingebauten Datenblattwerte, zusammengeführt mit Ihrer ~/.config/traindeck/devices.json (docs/planner.md)</translation>
    </message>
    <message>
        <location line="+2"/>
        <location line="+93"/>
        <source>Device</source>
        <translation>Gerät</translation>
    </message>
    <message>
        <location line="-87"/>
        <source>Devices</source>
        <translation>Geräte</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>train.steps × tokens per step</source>
        <translation>train.steps × Tokens pro Schritt</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tokens to train on: 1e9, 2.5G, 300M … (empty: train.steps × tokens per step)</source>
        <translation>Zu trainierende Tokens: 1e9, 2.5G, 300M … (leer: train.steps × Tokens pro Schritt)</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+67"/>
        <source>Token budget</source>
        <translation>Token-Budget</translation>
    </message>
    <message>
        <location line="-60"/>
        <source>Model FLOPs utilisation assumed: achieved model FLOP/s ÷ the device&apos;s dense peak (40 % is typical of a well-tuned GPU run; for this machine&apos;s CPU, the MFU of the This machine estimate, until you set one)</source>
        <translation>Angenommene Modell-FLOPs-Auslastung: erreichte Modell-FLOP/s ÷ dichte Spitzenleistung des Geräts (40 % ist typisch für einen gut abgestimmten GPU-Lauf; für die CPU dieses Rechners die MFU der Schätzung „Dieser Rechner“, bis Sie einen Wert setzen)</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>MFU</source>
        <translation>MFU</translation>
    </message>
    <message>
        <location line="+5"/>
        <source> h</source>
        <translation> h</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>none</source>
        <translation>keine</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Wall-clock hours the training must finish in (none: no deadline)</source>
        <translation>Stunden (Echtzeit), in denen das Training abgeschlossen sein muss (keine: keine Frist)</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+64"/>
        <source>Deadline</source>
        <translation>Frist</translation>
    </message>
    <message>
        <location line="-59"/>
        <source>catalogue</source>
        <translation>Katalog</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Price per device-hour of the chosen device (catalogue: the price in your devices.json, if any)</source>
        <translation>Preis pro Gerätestunde des gewählten Geräts (Katalog: der Preis in Ihrer devices.json, falls vorhanden)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Price per device-hour</source>
        <translation>Preis pro Gerätestunde</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>0: all-reduce, everything replicated</source>
        <translation>0: All-Reduce, alles repliziert</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>1: optimizer states sharded</source>
        <translation>1: Optimiererzustände partitioniert</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>3: + parameters sharded (fp32 only)</source>
        <translation>3: + Parameter partitioniert (nur fp32)</translation>
    </message>
    <message>
        <location line="-1"/>
        <source>2: + gradients sharded</source>
        <translation>2: + Gradienten partitioniert</translation>
    </message>
    <message>
        <location line="-37"/>
        <source>Devices, one engine rank each: data-parallel replicas × the tensor-parallel degree</source>
        <translation>Geräte, je ein Engine-Rang: datenparallele Replikate × Tensor-Parallelitätsgrad</translation>
    </message>
    <message>
        <location line="+39"/>
        <source>ZeRO stage (Rajbhandari et al. 2020); the engine trains stages 0 to 3, stage 3 in fp32 only</source>
        <translation>ZeRO-Stufe (Rajbhandari et al. 2020); die Engine trainiert die Stufen 0 bis 3, Stufe 3 nur in fp32</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>ZeRO stage</source>
        <translation>ZeRO-Stufe</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Devices per tensor-parallel group (Megatron-LM; train.tensor_parallel): each holds 1/N of every layer, so Devices must be a multiple of it</source>
        <translation>Geräte je tensorparalleler Gruppe (Megatron-LM; train.tensor_parallel): jedes hält 1/N jeder Schicht, daher muss die Geräteanzahl ein Vielfaches davon sein</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Tensor parallel</source>
        <translation>Tensor-parallel</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Memory per device by ZeRO stage</source>
        <translation>Speicher pro Gerät nach ZeRO-Stufe</translation>
    </message>
    <message>
        <location line="+8"/>
        <location line="+189"/>
        <source>ZeRO-%1</source>
        <translation>ZeRO-%1</translation>
    </message>
    <message>
        <location line="-185"/>
        <source>Compute, time and bandwidth</source>
        <translation>Rechenaufwand, Zeit und Bandbreite</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Training FLOPs</source>
        <translation>Trainings-FLOPs</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Throughput (all devices)</source>
        <translation>Durchsatz (alle Geräte)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Time to train the budget</source>
        <translation>Zeit zum Trainieren des Budgets</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Compute time per step</source>
        <translation>Rechenzeit pro Schritt</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Collective bytes per step and device</source>
        <translation>Kollektiv-Bytes pro Schritt und Gerät</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Bus bandwidth to hide them</source>
        <translation>Busbandbreite, um sie zu verbergen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Storage read bandwidth</source>
        <translation>Lesebandbreite des Datenträgers</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+8"/>
        <source>Cost</source>
        <translation>Kosten</translation>
    </message>
    <message>
        <location line="-5"/>
        <source>Devices needed per type</source>
        <translation>Benötigte Geräte je Typ</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Precision</source>
        <translation>Präzision</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Fit</source>
        <translation>Speicher</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Needed</source>
        <translation>Benötigt</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Time</source>
        <translation>Zeit</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Device-hours</source>
        <translation>Gerätestunden</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Fewest devices whose memory holds the chosen ZeRO stage (– never)</source>
        <translation>Wenigste Geräte, deren Speicher die gewählte ZeRO-Stufe fasst (– nie)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Fewest devices that finish the budget by the deadline at the MFU</source>
        <translation>Wenigste Geräte, die das Budget bei der MFU bis zur Frist schaffen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The larger of the two (– impossible)</source>
        <translation>Der größere der beiden Werte (– unmöglich)</translation>
    </message>
    <message>
        <location line="+54"/>
        <source> (planning only)</source>
        <translation> (nur Planung)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source> (this machine)</source>
        <translation> (dieser Rechner)</translation>
    </message>
    <message>
        <location line="+72"/>
        <source>Fix the marked fields to update the plan (the figures shown are of the last valid config).</source>
        <translation>Korrigieren Sie die markierten Felder, um den Plan zu aktualisieren (die angezeigten Werte gehören zur letzten gültigen Konfiguration).</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The token budget is not a number (e.g. 1e9 or 2.5G): train.steps × tokens per step is used.</source>
        <translation>Das Token-Budget ist keine Zahl (z. B. 1e9 oder 2.5G): train.steps × Tokens pro Schritt wird verwendet.</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>%1 is for planning only: the engine does not run on it.</source>
        <translation>%1 dient nur der Planung: Die Engine läuft nicht darauf.</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The engine trains ZeRO stage 3 in fp32 only: in mixed precision stage 3 is a planning estimate.</source>
        <translation>Die Engine trainiert ZeRO-Stufe 3 nur in fp32: In gemischter Präzision ist Stufe 3 eine Planungsschätzung.</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>This CPU&apos;s peak is not measured yet: calibrate it (This machine tab) to estimate time.</source>
        <translation>Die Spitzenleistung dieser CPU ist noch nicht gemessen: Kalibrieren Sie sie (Reiter „Dieser Rechner“), um die Zeit zu schätzen.</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1 has no peak in the catalogue at this precision: time and cost are unknown.</source>
        <translation>%1 hat im Katalog keine Spitzenleistung bei dieser Präzision: Zeit und Kosten sind unbekannt.</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>%1 × %2 (%3): %4 memory, %5 precision, peak %6</source>
        <translation>%1 × %2 (%3): %4 Speicher, Präzision %5, Spitze %6</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>%1FLOP/s</source>
        <translation>%1FLOP/s</translation>
    </message>
    <message>
        <location line="+0"/>
        <location line="+25"/>
        <source>unknown</source>
        <translation>unbekannt</translation>
    </message>
    <message>
        <location line="-19"/>
        <source>%1 (does not fit)</source>
        <translation>%1 (passt nicht)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>parameters %1 + gradients %2 + optimizer %3 + activations %4</source>
        <translation>Parameter %1 + Gradienten %2 + Optimierer %3 + Aktivierungen %4</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>%1 memory %2</source>
        <translation>%1, Speicher %2</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>%1 tokens</source>
        <translation>%1 Tokens</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>as entered</source>
        <translation>wie eingegeben</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>train.steps %1 × %2 tokens per step</source>
        <translation>train.steps %1 × %2 Tokens pro Schritt</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>%1FLOP</source>
        <translation>%1FLOP</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>budget × %1 FLOPs per token (6 N + 12 L C T)</source>
        <translation>Budget × %1 FLOPs pro Token (6 N + 12 L C T)</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>%1 tokens/s</source>
        <translation>%1 tokens/s</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1 devices × %2FLOP/s × MFU %3 % ÷ FLOPs per token</source>
        <translation>%1 Geräte × %2FLOP/s × MFU %3 % ÷ FLOPs pro Token</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>micro_batch × grad_accum × seq_len tokens per device</source>
        <translation>micro_batch × grad_accum × seq_len Tokens pro Gerät</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1B</source>
        <translation>%1B</translation>
    </message>
    <message>
        <location line="+0"/>
        <location line="+2"/>
        <source>none (one device)</source>
        <translation>keine (ein Gerät)</translation>
    </message>
    <message>
        <location line="-1"/>
        <source>Ring collectives counted as nccl-tests counts bus bytes (docs/planner.md)</source>
        <translation>Ring-Kollektive, gezählt wie nccl-tests Bus-Bytes zählt (docs/planner.md)</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+3"/>
        <source>%1B/s</source>
        <translation>%1B/s</translation>
    </message>
    <message>
        <location line="-2"/>
        <source>Collective bytes per step ÷ compute time per step: the bus bandwidth each device needs for communication to overlap fully with compute</source>
        <translation>Kollektiv-Bytes pro Schritt ÷ Rechenzeit pro Schritt: die Busbandbreite, die jedes Gerät braucht, damit sich die Kommunikation vollständig mit der Berechnung überlappt</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Throughput × %1 bytes per token on disk</source>
        <translation>Durchsatz × %1 Bytes pro Token auf der Festplatte</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1 (%2 per device-hour)</source>
        <translation>%1 (%2 pro Gerätestunde)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>unknown: enter a price per device-hour</source>
        <translation>unbekannt: Geben Sie einen Preis pro Gerätestunde ein</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Fit (ZeRO-%1)</source>
        <translation>Speicher (ZeRO-%1)</translation>
    </message>
</context>
<context>
    <name>td::gui::MainWindow</name>
    <message>
        <location filename="../gui/app/main_window.cpp" line="+115"/>
        <source>Cannot open the store %1: %2 Use File &gt; Open store or New store.</source>
        <translation>Die Datenbank %1 kann nicht geöffnet werden: %2 Verwenden Sie Datei &gt; Datenbank öffnen oder Neue Datenbank.</translation>
    </message>
    <message>
        <location line="+23"/>
        <location line="+496"/>
        <source>Start run</source>
        <translation>Lauf starten</translation>
    </message>
    <message>
        <location line="-440"/>
        <location line="+434"/>
        <source>Design</source>
        <translation>Entwurf</translation>
    </message>
    <message>
        <location line="-433"/>
        <location line="+434"/>
        <source>Data</source>
        <translation>Daten</translation>
    </message>
    <message>
        <location line="-433"/>
        <location line="+434"/>
        <source>Run</source>
        <translation>Lauf</translation>
    </message>
    <message>
        <location line="-433"/>
        <location line="+434"/>
        <source>Compare</source>
        <translation>Vergleich</translation>
    </message>
    <message>
        <location line="-374"/>
        <source>Run %1 started.</source>
        <translation>Lauf %1 gestartet.</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Re-attached to run %1, still training.</source>
        <translation>Wieder mit Lauf %1 verbunden, er trainiert noch.</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Run %1 ended: %2.</source>
        <translation>Lauf %1 beendet: %2.</translation>
    </message>
    <message>
        <location line="-130"/>
        <location line="+495"/>
        <source>Train this model where &quot;Train on&quot; says (Ctrl+R)</source>
        <translation>Dieses Modell dort trainieren, wo „Trainieren auf“ angibt (Strg+R)</translation>
    </message>
    <message>
        <location line="-480"/>
        <source>Train on:</source>
        <translation>Trainieren auf:</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>This machine, a node of a cluster saved on the Clusters page, or all its nodes (deployed over SSH; one rank per GPU, one per CPU node)</source>
        <translation>Dieser Rechner, ein Knoten eines auf der Seite „Cluster“ gespeicherten Clusters oder alle seine Knoten (Bereitstellung über SSH; ein Rank pro GPU, einer pro CPU-Knoten)</translation>
    </message>
    <message>
        <location line="+32"/>
        <source>Run %1 started again as %2.</source>
        <translation>Lauf %1 erneut gestartet als %2.</translation>
    </message>
    <message>
        <location line="+8"/>
        <location line="+434"/>
        <source>Clusters</source>
        <translation>Cluster</translation>
    </message>
    <message>
        <location line="-397"/>
        <source>Dataset %1 is ready; the designer uses it now (vocab_size %2).</source>
        <translation>Datensatz %1 ist bereit; der Entwurf verwendet ihn jetzt (vocab_size %2).</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>The design trains on %1 now (vocab_size %2).</source>
        <translation>Der Entwurf trainiert jetzt auf %1 (vocab_size %2).</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Run %1 is training on %2.</source>
        <translation>Lauf %1 trainiert auf %2.</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Re-attached to run %1 on %2.</source>
        <translation>Wieder mit Lauf %1 auf %2 verbunden.</translation>
    </message>
    <message>
        <location line="+24"/>
        <source>&amp;File</source>
        <translation>&amp;Datei</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&amp;New store…</source>
        <translation>&amp;Neue Datenbank…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>&amp;Open store…</source>
        <translation>Datenbank ö&amp;ffnen…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Recent stores</source>
        <translation>Zuletzt geöffnete Datenbanken</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>&amp;Quit</source>
        <translation>&amp;Beenden</translation>
    </message>
    <message>
        <location line="+3"/>
        <location line="+30"/>
        <source>&amp;Run</source>
        <translation>&amp;Lauf</translation>
    </message>
    <message>
        <location line="-29"/>
        <source>&amp;Start run</source>
        <translation>Lauf &amp;starten</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>S&amp;top run</source>
        <translation>Lauf an&amp;halten</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>&amp;Resume run</source>
        <translation>Lauf &amp;fortsetzen</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Stop &amp;timeout on nodes…</source>
        <translation>&amp;Zeitlimit beim Anhalten auf Knoten…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Stop timeout</source>
        <translation>Zeitlimit beim Anhalten</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Seconds a remote run gets to finish its step and write its checkpoint after Stop, before it is killed:</source>
        <translation>Sekunden, die ein entfernter Lauf nach „Anhalten“ hat, um seinen Schritt zu beenden und seinen Checkpoint zu schreiben, bevor er zwangsweise beendet wird:</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>&amp;Alert notifications</source>
        <translation>Benachrichtigungen bei &amp;Alarmen</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>&amp;Compare selected runs</source>
        <translation>Ausgewählte Läufe &amp;vergleichen</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>&amp;View</source>
        <translation>&amp;Ansicht</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&amp;Design</source>
        <translation>&amp;Entwurf</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>D&amp;ata</source>
        <translation>&amp;Daten</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>&amp;Compare</source>
        <translation>&amp;Vergleich</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>C&amp;lusters</source>
        <translation>&amp;Cluster</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>&amp;Find run or experiment</source>
        <translation>Lauf oder Experiment &amp;suchen</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>&amp;Theme</source>
        <translation>&amp;Farbschema</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>&amp;Language</source>
        <translation>S&amp;prache</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>&amp;Help</source>
        <translation>&amp;Hilfe</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>&amp;About TrainDeck</source>
        <translation>Ü&amp;ber TrainDeck</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>About &amp;Qt</source>
        <translation>Über &amp;Qt</translation>
    </message>
    <message>
        <location line="+11"/>
        <location line="+9"/>
        <location line="+248"/>
        <source>Store: %1</source>
        <translation>Datenbank: %1</translation>
    </message>
    <message>
        <location line="-207"/>
        <source>Cannot open the store %1: %2</source>
        <translation>Die Datenbank %1 kann nicht geöffnet werden: %2</translation>
    </message>
    <message>
        <location line="+69"/>
        <source>The store is still opening: start the run in a moment.</source>
        <translation>Die Datenbank wird noch geöffnet: Starten Sie den Lauf gleich noch einmal.</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>The design has invalid fields (marked in red): fix them first.</source>
        <translation>Der Entwurf hat ungültige Felder (rot markiert): Korrigieren Sie sie zuerst.</translation>
    </message>
    <message>
        <source>The cluster %1 has changed; choose where to train again.</source>
        <translation type="vanished">Der Cluster %1 hat sich geändert; wählen Sie erneut, wo trainiert werden soll.</translation>
    </message>
    <message>
        <location line="+30"/>
        <source>Deploying run %1 to %2…</source>
        <translation>Lauf %1 wird auf %2 bereitgestellt…</translation>
    </message>
    <message>
        <source>%1 nodes × %2 GPUs</source>
        <translation type="vanished">%1 Knoten × %2 GPUs</translation>
    </message>
    <message>
        <source>%1 CPU nodes</source>
        <translation type="vanished">%1 CPU-Knoten</translation>
    </message>
    <message>
        <source>%1 (Slurm, %2)</source>
        <translation type="vanished">%1 (Slurm, %2)</translation>
    </message>
    <message>
        <source>%1 / all %2 nodes (%3 ranks)</source>
        <translation type="vanished">%1 / alle %2 Knoten (%3 Ranks)</translation>
    </message>
    <message>
        <source>1 GPU</source>
        <translation type="vanished">1 GPU</translation>
    </message>
    <message>
        <source>%1 GPUs</source>
        <translation type="vanished">%1 GPUs</translation>
    </message>
    <message>
        <source>CPU</source>
        <translation type="vanished">CPU</translation>
    </message>
    <message>
        <location line="-311"/>
        <source>Stopping run %1 on its node at the end of its step (checkpoint first)…</source>
        <translation>Lauf %1 wird auf seinem Knoten am Ende seines Schritts angehalten (zuerst ein Checkpoint)…</translation>
    </message>
    <message>
        <location line="-1"/>
        <source>Stopping run %1 at the end of its step (checkpoint first)…</source>
        <translation>Lauf %1 wird am Ende seines Schritts angehalten (zuerst ein Checkpoint)…</translation>
    </message>
    <message>
        <location line="+302"/>
        <source>Choose where to train (&quot;Train on&quot;).</source>
        <translation>Wählen Sie, wo trainiert wird („Trainieren auf“).</translation>
    </message>
    <message>
        <location line="+69"/>
        <source>Runs are training</source>
        <translation>Läufe trainieren noch</translation>
    </message>
    <message numerus="yes">
        <location line="+1"/>
        <source>%n run(s) are training. Leave them running (TrainDeck re-attaches at its next start) or stop them (each writes a checkpoint first)?</source>
        <translation>
            <numerusform>%n Lauf trainiert noch. Weiterlaufen lassen (TrainDeck verbindet sich beim nächsten Start wieder) oder anhalten (zuerst wird ein Checkpoint geschrieben)?</numerusform>
            <numerusform>%n Läufe trainieren noch. Weiterlaufen lassen (TrainDeck verbindet sich beim nächsten Start wieder) oder anhalten (jeder schreibt zuerst einen Checkpoint)?</numerusform>
        </translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Leave running</source>
        <translation>Weiterlaufen lassen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Stop runs</source>
        <translation>Läufe anhalten</translation>
    </message>
    <message>
        <location line="+83"/>
        <source>New store</source>
        <translation>Neue Datenbank</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+11"/>
        <source>TrainDeck stores (*.db *.sqlite);;All files (*)</source>
        <translation>TrainDeck-Datenbanken (*.db *.sqlite);;Alle Dateien (*)</translation>
    </message>
    <message>
        <location line="-8"/>
        <source>%1 exists already: use File &gt; Open store to open it; nothing was overwritten.</source>
        <translation>%1 existiert bereits: Öffnen Sie sie mit Datei &gt; Datenbank öffnen; nichts wurde überschrieben.</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Open store</source>
        <translation>Datenbank öffnen</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>TrainDeck</source>
        <translation>TrainDeck</translation>
    </message>
    <message>
        <location line="-352"/>
        <source>Language: %1.</source>
        <translation>Sprache: %1.</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>&amp;User guide</source>
        <translation>&amp;Benutzerhandbuch</translation>
    </message>
    <message>
        <location line="+220"/>
        <source>Save them before you quit?</source>
        <translation>Vor dem Beenden speichern?</translation>
    </message>
    <message>
        <location line="+61"/>
        <source>The user guide was not found (looked for %1). It is docs/guide.md in TrainDeck&apos;s sources; the package installs it in /usr/share/doc/traindeck.</source>
        <translation>Das Benutzerhandbuch wurde nicht gefunden (gesucht: %1). Es ist docs/guide.md in den Quellen von TrainDeck; das Paket installiert es unter /usr/share/doc/traindeck.</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>No program to open %1 with: open it in a text editor or a Markdown viewer.</source>
        <translation>Kein Programm zum Öffnen von %1: Öffnen Sie die Datei in einem Texteditor oder einem Markdown-Betrachter.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Opened the user guide, %1.</source>
        <translation>Benutzerhandbuch geöffnet: %1.</translation>
    </message>
    <message>
        <location line="-510"/>
        <source>Run name:</source>
        <translation>Laufname:</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Shown instead of the run id in the sidebar, legends and tables; rename it later from the sidebar. Empty: the fields that differ from the experiment&apos;s last run.</source>
        <translation>Wird statt der Lauf-ID in der Seitenleiste, in Legenden und Tabellen gezeigt; später in der Seitenleiste umbenennbar. Leer: die Felder, die sich vom letzten Lauf des Experiments unterscheiden.</translation>
    </message>
    <message>
        <location line="+327"/>
        <source>optional</source>
        <translation>optional</translation>
    </message>
    <message>
        <location line="+38"/>
        <source>The run name is refused: %1</source>
        <translation>Der Laufname wird abgelehnt: %1</translation>
    </message>
    <message numerus="yes">
        <location line="-71"/>
        <source>%n other run(s) already train on this machine&apos;s CPU (%1): they and this run slow down, each to roughly 1/%2 of its speed alone</source>
        <translation>
            <numerusform>%n anderer Lauf trainiert schon auf der CPU dieses Rechners (%1): er und dieser Lauf werden langsamer, jeder auf etwa 1/%2 seiner Geschwindigkeit allein</numerusform>
            <numerusform>%n andere Läufe trainieren schon auf der CPU dieses Rechners (%1): sie und dieser Lauf werden langsamer, jeder auf etwa 1/%2 seiner Geschwindigkeit allein</numerusform>
        </translation>
    </message>
    <message>
        <location line="+6"/>
        <source> (this run: ~%1 tokens/s instead of ~%2 at the calibrated peak of %3 GFLOP/s)</source>
        <translation> (dieser Lauf: ~%1 Tokens/s statt ~%2 bei der kalibrierten Spitze von %3 GFLOP/s)</translation>
    </message>
</context>
<context>
    <name>td::gui::ManifestView</name>
    <message>
        <location filename="../gui/data/manifest_view.cpp" line="+23"/>
        <source>Field</source>
        <translation>Feld</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Value</source>
        <translation>Wert</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>No dataset</source>
        <translation>Kein Datensatz</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>prepare one, or select a registered dataset</source>
        <translation>bereiten Sie einen vor oder wählen Sie einen registrierten Datensatz</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Folder</source>
        <translation>Ordner</translation>
    </message>
    <message numerus="yes">
        <location line="+11"/>
        <source>%n shard file(s)</source>
        <translation>
            <numerusform>%n Shard-Datei</numerusform>
            <numerusform>%n Shard-Dateien</numerusform>
        </translation>
    </message>
    <message>
        <location line="+3"/>
        <source>val_fraction</source>
        <translation>val_fraction</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Input bytes</source>
        <translation>Eingabe-Bytes</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Token dtype</source>
        <translation>Token-dtype</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Created by</source>
        <translation>Erstellt von</translation>
    </message>
    <message>
        <location filename="../gui/data/manifest_view.h" line="+30"/>
        <source>Train tokens</source>
        <translation>Trainings-Tokens</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Val tokens</source>
        <translation>Validierungs-Tokens</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Files</source>
        <translation>Dateien</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Skipped files</source>
        <translation>Übersprungene Dateien</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tokenizer</source>
        <translation>Tokenizer</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>vocab_size</source>
        <translation>vocab_size</translation>
    </message>
</context>
<context>
    <name>td::gui::MemoryBars</name>
    <message>
        <location filename="../gui/designer/memory_bars.cpp" line="+32"/>
        <source>%1: %2 (parameters %3, gradients %4, optimizer %5, activations %6)</source>
        <translation>%1: %2 (Parameter %3, Gradienten %4, Optimierer %5, Aktivierungen %6)</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Device memory: %1</source>
        <translation>Gerätespeicher: %1</translation>
    </message>
    <message>
        <location line="+18"/>
        <source>parameters</source>
        <translation>Parameter</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>gradients</source>
        <translation>Gradienten</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>optimizer</source>
        <translation>Optimierer</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>activations</source>
        <translation>Aktivierungen</translation>
    </message>
</context>
<context>
    <name>td::gui::MetricsModel</name>
    <message>
        <location filename="../gui/metrics/metrics_model.cpp" line="+151"/>
        <source>No store is open.</source>
        <translation>Keine Datenbank geöffnet.</translation>
    </message>
</context>
<context>
    <name>td::gui::ModelDesigner</name>
    <message>
        <location filename="../gui/designer/model_designer.cpp" line="+85"/>
        <source>Preset…</source>
        <translation>Vorlage…</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Fills the model fields with a common shape; training and data stay.</source>
        <translation>Füllt die Modellfelder mit einer gängigen Form; Training und Daten bleiben unverändert.</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Load JSON…</source>
        <translation>JSON laden…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Save JSON…</source>
        <translation>JSON speichern…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Preset:</source>
        <translation>Vorlage:</translation>
    </message>
    <message>
        <location line="+28"/>
        <source>Model</source>
        <translation>Modell</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Training</source>
        <translation>Training</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Data</source>
        <translation>Daten</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>AdamW betas and eps, evaluation and sample settings, checkpoints kept, progress lines, ZeRO and the distributed settings</source>
        <translation>AdamW-betas und -eps, Einstellungen für Evaluierung und Samples, behaltene Checkpoints, Fortschrittszeilen, ZeRO und die verteilten Einstellungen</translation>
    </message>
    <message>
        <location line="+7"/>
        <location line="+282"/>
        <source>Advanced</source>
        <translation>Erweitert</translation>
    </message>
    <message>
        <location line="-260"/>
        <source>This machine</source>
        <translation>Dieser Rechner</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Infrastructure</source>
        <translation>Infrastruktur</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The config on a cluster: memory per device for ZeRO stages 0-3, time and cost of a token budget, network and storage bandwidth, devices needed</source>
        <translation>Die Konfiguration auf einem Cluster: Speicher pro Gerät für die ZeRO-Stufen 0-3, Zeit und Kosten eines Token-Budgets, Netzwerk- und Datenträgerbandbreite, benötigte Geräte</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>%1, %2</source>
        <translation>%1, %2</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>

No GPU is listed: %1</source>
        <translation>

Keine GPU aufgeführt: %1</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>%1
Allowed: %2
Default: %3</source>
        <translation>%1
Erlaubt: %2
Standard: %3</translation>
    </message>
    <message>
        <location line="+61"/>
        <location line="+167"/>
        <source>prepare a dataset first (Data page)</source>
        <translation>zuerst einen Datensatz vorbereiten (Seite „Daten“)</translation>
    </message>
    <message>
        <location line="-156"/>
        <source>%1 (default)</source>
        <translation>%1 (Standard)</translation>
    </message>
    <message>
        <location line="+7"/>
        <location line="+263"/>
        <source>0 (4 × d_model)</source>
        <translation>0 (4 × d_model)</translation>
    </message>
    <message>
        <location line="-262"/>
        <source>(empty)</source>
        <translation>(leer)</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>%1 (not seen here)</source>
        <translation>%1 (hier nicht gefunden)</translation>
    </message>
    <message numerus="yes">
        <location line="+118"/>
        <source>Advanced (%n set)</source>
        <translation>
            <numerusform>Erweitert (%n gesetzt)</numerusform>
            <numerusform>Erweitert (%n gesetzt)</numerusform>
        </translation>
    </message>
    <message>
        <location line="+14"/>
        <source>%1 tokenizer, vocab_size %2</source>
        <translation>Tokenizer %1, vocab_size %2</translation>
    </message>
    <message>
        <location line="+0"/>
        <location line="+141"/>
        <source>unknown</source>
        <translation>unbekannt</translation>
    </message>
    <message>
        <location line="-136"/>
        <source>choose a dataset</source>
        <translation>einen Datensatz wählen</translation>
    </message>
    <message>
        <location line="+49"/>
        <source>cpu (default)</source>
        <translation>cpu (Standard)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>This machine&apos;s CPU (OpenBLAS, OpenMP)</source>
        <translation>CPU dieses Rechners (OpenBLAS, OpenMP)</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>%1 — %2</source>
        <translation>%1 — %2</translation>
    </message>
    <message>
        <location line="+60"/>
        <source>0 (8/3 × d_model, rounded up to ffn_multiple_of)</source>
        <translation>0 (8/3 × d_model, aufgerundet auf ein Vielfaches von ffn_multiple_of)</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>missing: prepare a dataset first (Data page), or choose one here</source>
        <translation>fehlt: zuerst einen Datensatz vorbereiten (Seite „Daten“) oder hier einen wählen</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>value %1 differs from the dataset&apos;s %2 tokenizer (%3 ids): set %3, or choose the dataset again</source>
        <translation>Wert %1 weicht vom Tokenizer %2 des Datensatzes ab (%3 IDs): %3 setzen oder den Datensatz erneut wählen</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>Cannot open &apos;%1&apos;: %2</source>
        <translation>&apos;%1&apos; kann nicht geöffnet werden: %2</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>&apos;%1&apos; is %2 bytes: too large to be a run config.</source>
        <translation>&apos;%1&apos; ist %2 Bytes groß: zu groß für eine Laufkonfiguration.</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>&apos;%1&apos; is not valid JSON: %2. The form was left as it was.</source>
        <translation>&apos;%1&apos; ist kein gültiges JSON: %2. Das Formular blieb unverändert.</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>&apos;%1&apos; is not a valid run config; the form was left as it was:
%2</source>
        <translation>&apos;%1&apos; ist keine gültige Laufkonfiguration; das Formular blieb unverändert:
%2</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>The config has errors; fix the marked fields before saving:
%1</source>
        <translation>Die Konfiguration hat Fehler; korrigieren Sie vor dem Speichern die markierten Felder:
%1</translation>
    </message>
    <message>
        <location line="+3"/>
        <location line="+3"/>
        <source>Cannot write &apos;%1&apos;: %2</source>
        <translation>&apos;%1&apos; kann nicht geschrieben werden: %2</translation>
    </message>
    <message>
        <location line="+5"/>
        <location line="+4"/>
        <source>Load run config</source>
        <translation>Laufkonfiguration laden</translation>
    </message>
    <message>
        <location line="-3"/>
        <source>JSON configs (*.json);;All files (*)</source>
        <translation>JSON-Konfigurationen (*.json);;Alle Dateien (*)</translation>
    </message>
    <message>
        <location line="+7"/>
        <location line="+4"/>
        <source>Save run config</source>
        <translation>Laufkonfiguration speichern</translation>
    </message>
    <message>
        <location line="-4"/>
        <source>JSON configs (*.json)</source>
        <translation>JSON-Konfigurationen (*.json)</translation>
    </message>
</context>
<context>
    <name>td::gui::NodeAccess</name>
    <message>
        <location filename="../gui/cluster/node_access.cpp" line="+95"/>
        <source>%1: no password was given, so TrainDeck did not log in. Connect again and enter it.</source>
        <translation>%1: Es wurde kein Passwort angegeben, daher hat sich TrainDeck nicht angemeldet. Verbinden Sie sich erneut und geben Sie es ein.</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1: no passphrase was given for the key %2, so TrainDeck did not log in. Connect again and enter it.</source>
        <translation>%1: Für den Schlüssel %2 wurde keine Passphrase angegeben, daher hat sich TrainDeck nicht angemeldet. Verbinden Sie sich erneut und geben Sie sie ein.</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>WARNING: the host key of %1 has CHANGED (it is now %2 %3, unlike the entry in %4). Someone may be intercepting the connection (a man-in-the-middle attack), or the node was reinstalled. TrainDeck refuses to connect. When you know the new key is right, remove the old entry with `ssh-keygen -R &apos;%5&apos; -f %4` and connect again.</source>
        <translation>WARNUNG: Der Hostschlüssel von %1 hat sich GEÄNDERT (er ist jetzt %2 %3, anders als der Eintrag in %4). Möglicherweise fängt jemand die Verbindung ab (ein Man-in-the-Middle-Angriff), oder der Knoten wurde neu installiert. TrainDeck verweigert die Verbindung. Wenn Sie sicher sind, dass der neue Schlüssel stimmt, entfernen Sie den alten Eintrag mit `ssh-keygen -R &apos;%5&apos; -f %4` und verbinden Sie sich erneut.</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>%1: the host key (%2 %3) was not accepted, so TrainDeck did not connect. Compare it with the node&apos;s `ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub`, then connect again and accept it.</source>
        <translation>%1: Der Hostschlüssel (%2 %3) wurde nicht akzeptiert, daher hat sich TrainDeck nicht verbunden. Vergleichen Sie ihn mit der Ausgabe von `ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub` auf dem Knoten, verbinden Sie sich dann erneut und akzeptieren Sie ihn.</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>NodeAccess::open was called on the GUI thread; call it from a worker thread (internal error)</source>
        <translation>NodeAccess::open wurde im GUI-Thread aufgerufen; rufen Sie es aus einem Worker-Thread auf (interner Fehler)</translation>
    </message>
</context>
<context>
    <name>td::gui::NodeTableModel</name>
    <message>
        <location filename="../gui/cluster/node_table_model.cpp" line="+39"/>
        <source> via %1</source>
        <translation> über %1</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>ssh-agent</source>
        <translation>ssh-agent</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>key file</source>
        <translation>Schlüsseldatei</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>password</source>
        <translation>Passwort</translation>
    </message>
    <message>
        <location line="+59"/>
        <source>%1 copy</source>
        <translation>%1 Kopie</translation>
    </message>
    <message>
        <location line="+60"/>
        <source>testing…</source>
        <translation>wird getestet…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>connected</source>
        <translation>verbunden</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>failed</source>
        <translation>fehlgeschlagen</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Empty: the Port of ~/.ssh/config, else 22</source>
        <translation>Leer: der Port aus ~/.ssh/config, sonst 22</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Empty: the User of ~/.ssh/config, else your local user name</source>
        <translation>Leer: der User aus ~/.ssh/config, sonst Ihr lokaler Benutzername</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Key authentication: the private key; empty: the IdentityFile of ~/.ssh/config</source>
        <translation>Anmeldung per Schlüssel: der private Schlüssel; leer: die IdentityFile aus ~/.ssh/config</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>GPUs to use on the node; 0: train on its CPU</source>
        <translation>Zu verwendende GPUs auf dem Knoten; 0: auf seiner CPU trainieren</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Folder on the node for the engine, data and runs (relative: under the home folder)</source>
        <translation>Ordner auf dem Knoten für Engine, Daten und Läufe (relativ: unterhalb des Home-Ordners)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Jump host(s) &quot;[user@]host[:port]&quot;, comma-separated; empty: the ProxyJump of ~/.ssh/config</source>
        <translation>Jump-Host(s) „[user@]host[:port]“, durch Kommas getrennt; leer: der ProxyJump aus ~/.ssh/config</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Runs on several nodes: the address the other nodes reach this node at, used for the rendezvous when it is the first node; empty: its host as SSH reaches it</source>
        <translation>Bei Läufen auf mehreren Knoten: die Adresse, unter der die anderen Knoten diesen Knoten erreichen, verwendet für das Rendezvous, wenn er der erste Knoten ist; leer: sein Host, wie SSH ihn erreicht</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Runs on several nodes: the network interface for collectives (e.g. eth0, ib0); empty: the interface toward the first node</source>
        <translation>Bei Läufen auf mehreren Knoten: die Netzwerkschnittstelle für Kollektive (z. B. eth0, ib0); leer: die Schnittstelle in Richtung des ersten Knotens</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The image the engine runs in on this node; empty: the engine bundle, no container. Set it under the table for the selected node</source>
        <translation>Das Image, in dem die Engine auf diesem Knoten läuft; leer: das Engine-Paket, kein Container. Unter der Tabelle für den ausgewählten Knoten einstellen</translation>
    </message>
    <message>
        <location line="+55"/>
        <source>Name</source>
        <translation>Name</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Host</source>
        <translation>Host</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Port</source>
        <translation>Port</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>User</source>
        <translation>Benutzer</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Auth</source>
        <translation>Anmeldung</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Key file</source>
        <translation>Schlüsseldatei</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>GPUs</source>
        <translation>GPUs</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Work directory</source>
        <translation>Arbeitsverzeichnis</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Jump host</source>
        <translation>Jump-Host</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Cluster address</source>
        <translation>Cluster-Adresse</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Interface</source>
        <translation>Schnittstelle</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Container</source>
        <translation>Container</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>As resolved</source>
        <translation>Aufgelöst</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Test</source>
        <translation>Test</translation>
    </message>
</context>
<context>
    <name>td::gui::Planner</name>
    <message>
        <location filename="../gui/plan/planner.cpp" line="+209"/>
        <source>the engine&apos;s device list is not the JSON `traindeck-engine devices` prints: %1</source>
        <translation>die Geräteliste der Engine ist nicht das JSON, das `traindeck-engine devices` ausgibt: %1</translation>
    </message>
    <message>
        <location line="+24"/>
        <source>The engine (traindeck-engine) was not found, so no GPU is listed: build it, or set TRAINDECK_ENGINE.</source>
        <translation>Die Engine (traindeck-engine) wurde nicht gefunden, daher ist keine GPU aufgeführt: Bauen Sie sie oder setzen Sie TRAINDECK_ENGINE.</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Could not start the engine &apos;%1&apos; to list its GPUs: %2</source>
        <translation>Die Engine &apos;%1&apos; konnte nicht gestartet werden, um ihre GPUs aufzulisten: %2</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>`traindeck-engine devices` failed (exit code %1): %2</source>
        <translation>`traindeck-engine devices` ist fehlgeschlagen (Exit-Code %1): %2</translation>
    </message>
    <message>
        <location line="+103"/>
        <source>Your device catalogue was not read (%1); the built-in devices are shown.</source>
        <translation>Ihr Gerätekatalog wurde nicht gelesen (%1); die eingebauten Geräte werden angezeigt.</translation>
    </message>
    <message>
        <location line="+36"/>
        <source>The engine (traindeck-engine) was not found: build it, or set TRAINDECK_ENGINE to its path, then calibrate again.</source>
        <translation>Die Engine (traindeck-engine) wurde nicht gefunden: Bauen Sie sie oder setzen Sie TRAINDECK_ENGINE auf ihren Pfad und kalibrieren Sie dann erneut.</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Could not start the engine &apos;%1&apos; to calibrate: %2. Check that traindeck-engine is built, or set TRAINDECK_ENGINE.</source>
        <translation>Die Engine &apos;%1&apos; konnte zum Kalibrieren nicht gestartet werden: %2. Prüfen Sie, ob traindeck-engine gebaut ist, oder setzen Sie TRAINDECK_ENGINE.</translation>
    </message>
    <message>
        <location line="+21"/>
        <source>Calibration cancelled.</source>
        <translation>Kalibrierung abgebrochen.</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>The engine crashed while calibrating. %1</source>
        <translation>Die Engine ist beim Kalibrieren abgestürzt. %1</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Calibration failed (engine exit code %1): %2</source>
        <translation>Kalibrierung fehlgeschlagen (Exit-Code der Engine %1): %2</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>The engine finished, but its calibration cache %1 holds no peak for %2 threads on this CPU.</source>
        <translation>Die Engine ist fertig, aber ihr Kalibrierungscache %1 enthält keine Spitzenleistung für %2 Threads auf dieser CPU.</translation>
    </message>
</context>
<context>
    <name>td::gui::PrepareJob</name>
    <message>
        <location filename="../gui/prepare/prepare_job.cpp" line="+83"/>
        <source>No input: add files or folders to prepare.</source>
        <translation>Keine Eingabe: Fügen Sie Dateien oder Ordner zum Vorbereiten hinzu.</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>No output folder: choose where the dataset goes.</source>
        <translation>Kein Ausgabeordner: Wählen Sie, wohin der Datensatz geschrieben wird.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Cannot find traindeck-engine: install it beside traindeck, or set TRAINDECK_ENGINE to its path.</source>
        <translation>traindeck-engine nicht gefunden: Installieren Sie es neben traindeck oder setzen Sie TRAINDECK_ENGINE auf seinen Pfad.</translation>
    </message>
    <message>
        <location line="+85"/>
        <source>Cannot start the engine &apos;%1&apos;: %2</source>
        <translation>Die Engine &apos;%1&apos; kann nicht gestartet werden: %2</translation>
    </message>
    <message>
        <location line="+49"/>
        <source>The dataset was prepared in %1, but registering it in the store failed: %2</source>
        <translation>Der Datensatz wurde in %1 vorbereitet, aber seine Registrierung in der Datenbank ist fehlgeschlagen: %2</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The engine stopped unexpectedly (%1).</source>
        <translation>Die Engine wurde unerwartet beendet (%1).</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The engine finished without reporting the dataset (is it an older traindeck-engine without --progress-json?).</source>
        <translation>Die Engine wurde beendet, ohne den Datensatz zu melden (ist es ein älteres traindeck-engine ohne --progress-json?).</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The engine exited with code %1 and no message.</source>
        <translation>Die Engine wurde mit Code %1 und ohne Meldung beendet.</translation>
    </message>
</context>
<context>
    <name>td::gui::RankLogs</name>
    <message>
        <location filename="../gui/runs/rank_logs.cpp" line="+156"/>
        <source>No store is open.</source>
        <translation>Keine Datenbank geöffnet.</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Run %1 is not in this store.</source>
        <translation>Lauf %1 ist nicht in dieser Datenbank.</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>The log of rank %1 cannot be read from %2: %3</source>
        <translation>Das Log von Rang %1 kann nicht von %2 gelesen werden: %3</translation>
    </message>
</context>
<context>
    <name>td::gui::RemoteRunController</name>
    <message>
        <source>No store is open.</source>
        <translation type="vanished">Keine Datenbank geöffnet.</translation>
    </message>
    <message>
        <source>No way to connect to nodes is set up (no connector).</source>
        <translation type="vanished">Es ist keine Möglichkeit eingerichtet, sich mit Knoten zu verbinden (kein Connector).</translation>
    </message>
    <message>
        <location filename="../gui/runs/remote_run_controller.cpp" line="+53"/>
        <source>%1 / all %2 nodes (%3 ranks)</source>
        <translation>%1 / alle %2 Knoten (%3 Ranks)</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>1 GPU</source>
        <translation>1 GPU</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>%1 GPUs</source>
        <translation>%1 GPUs</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <location line="+9"/>
        <location line="+31"/>
        <source>The cluster %1 has no nodes: add them on the Clusters page.</source>
        <translation>Der Cluster %1 hat keine Knoten: Fügen Sie sie auf der Seite „Cluster“ hinzu.</translation>
    </message>
    <message>
        <location line="-25"/>
        <source>The node has no host: set it in the cluster designer.</source>
        <translation>Der Knoten hat keinen Host: Tragen Sie ihn auf der Seite „Cluster“ ein.</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The node %1 cannot be used: %2. Fix it on the Clusters page.</source>
        <translation>Der Knoten %1 kann nicht verwendet werden: %2. Beheben Sie das auf der Seite „Cluster“.</translation>
    </message>
    <message>
        <source>The training engine (traindeck-engine) was not found. Build it (cmake --build build) or set TRAINDECK_ENGINE to its path.</source>
        <translation type="vanished">Die Trainings-Engine (traindeck-engine) wurde nicht gefunden. Bauen Sie sie (cmake --build build) oder setzen Sie TRAINDECK_ENGINE auf ihren Pfad.</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>An SSH run needs a cluster with at least one node.</source>
        <translation>Ein SSH-Lauf braucht einen Cluster mit mindestens einem Knoten.</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>The cluster %1 has no node %2; choose where to train again.</source>
        <translation>Der Cluster %1 hat keinen Knoten %2; wählen Sie erneut, wo trainiert wird.</translation>
    </message>
    <message>
        <location line="+116"/>
        <location line="+7"/>
        <source>Run %1 on %2: %3</source>
        <translation>Lauf %1 auf %2: %3</translation>
    </message>
    <message>
        <source>Run %1 is not followed here.</source>
        <translation type="vanished">Lauf %1 wird hier nicht verfolgt.</translation>
    </message>
    <message>
        <source>Run %1 is still running.</source>
        <translation type="vanished">Lauf %1 läuft noch.</translation>
    </message>
    <message>
        <source>Run %1 is not in this store.</source>
        <translation type="vanished">Lauf %1 ist nicht in dieser Datenbank.</translation>
    </message>
    <message>
        <source>Run %1 ran on this machine, not on a node.</source>
        <translation type="vanished">Lauf %1 lief auf diesem Rechner, nicht auf einem Knoten.</translation>
    </message>
    <message>
        <source>Run %1 ran on a %2 cluster: it resumes there.</source>
        <translation type="vanished">Lauf %1 lief auf einem %2-Cluster: Er wird dort fortgesetzt.</translation>
    </message>
    <message>
        <source>Run %1 has completed: start a new run to train further.</source>
        <translation type="vanished">Lauf %1 ist abgeschlossen: Starten Sie einen neuen Lauf, um weiter zu trainieren.</translation>
    </message>
    <message>
        <source>The training engine (traindeck-engine) was not found. Build it or set TRAINDECK_ENGINE to its path.</source>
        <translation type="vanished">Die Trainings-Engine (traindeck-engine) wurde nicht gefunden. Bauen Sie sie oder setzen Sie TRAINDECK_ENGINE auf ihren Pfad.</translation>
    </message>
    <message>
        <source>Checkpoints of run %1: %2</source>
        <translation type="vanished">Checkpoints von Lauf %1: %2</translation>
    </message>
    <message>
        <location line="-82"/>
        <source>Run %1: its stored node is unreadable: %2</source>
        <translation>Lauf %1: Sein gespeicherter Knoten ist nicht lesbar: %2</translation>
    </message>
    <message>
        <source>A checkpoint of run %1 is being downloaded already.</source>
        <translation type="vanished">Ein Checkpoint von Lauf %1 wird bereits heruntergeladen.</translation>
    </message>
    <message>
        <source>Run %1 did not run on a node: its checkpoints are on this machine.</source>
        <translation type="vanished">Lauf %1 lief nicht auf einem Knoten: Seine Checkpoints liegen auf diesem Rechner.</translation>
    </message>
    <message>
        <source>&apos;%1&apos; is not a checkpoint name (step_ and 8 digits).</source>
        <translation type="vanished">&apos;%1&apos; ist kein Checkpoint-Name (step_ und 8 Ziffern).</translation>
    </message>
    <message>
        <source>Checkpoint of run %1: %2</source>
        <translation type="vanished">Checkpoint von Lauf %1: %2</translation>
    </message>
    <message>
        <source>the run folder %1 on %2 holds no complete checkpoint</source>
        <translation type="vanished">der Laufordner %1 auf %2 enthält keinen vollständigen Checkpoint</translation>
    </message>
    <message>
        <source>download cancelled</source>
        <translation type="vanished">Download abgebrochen</translation>
    </message>
</context>
<context>
    <name>td::gui::RemoteTargetBase</name>
    <message>
        <location filename="../gui/runs/remote_target_base.cpp" line="+79"/>
        <location line="+72"/>
        <location line="+110"/>
        <location line="+63"/>
        <source>No store is open.</source>
        <translation>Keine Datenbank geöffnet.</translation>
    </message>
    <message>
        <location line="-241"/>
        <location line="+68"/>
        <location line="+110"/>
        <location line="+64"/>
        <source>No way to connect to nodes is set up (no connector).</source>
        <translation>Es ist keine Möglichkeit eingerichtet, sich mit Knoten zu verbinden (kein Connector).</translation>
    </message>
    <message>
        <location line="-202"/>
        <source>Run %1 is not followed here.</source>
        <translation>Lauf %1 wird hier nicht verfolgt.</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>stopping</source>
        <translation>wird angehalten</translation>
    </message>
    <message>
        <location line="+25"/>
        <location line="+17"/>
        <source>Run %1 is still running.</source>
        <translation>Lauf %1 läuft noch.</translation>
    </message>
    <message>
        <location line="-5"/>
        <source>Run %1 is not in this store.</source>
        <translation>Lauf %1 ist nicht in dieser Datenbank.</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Run %1 ran on this machine, not on a node.</source>
        <translation>Lauf %1 lief auf diesem Rechner, nicht auf einem Knoten.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Run %1 ran on a %2 target: it resumes there.</source>
        <translation>Lauf %1 lief auf einem Ziel der Art %2: Er wird dort fortgesetzt.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Run %1 has completed: start a new run to train further.</source>
        <translation>Lauf %1 ist abgeschlossen: Starten Sie einen neuen Lauf, um weiter zu trainieren.</translation>
    </message>
    <message>
        <location line="+65"/>
        <source>Run %1 did not run on a node: its checkpoints are on this machine.</source>
        <translation>Lauf %1 lief nicht auf einem Knoten: Seine Checkpoints liegen auf diesem Rechner.</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Run %1: its stored node is unreadable: %2</source>
        <translation>Lauf %1: Sein gespeicherter Knoten ist nicht lesbar: %2</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>&apos;%1&apos; is not a checkpoint name (step_ and 8 digits).</source>
        <translation>&apos;%1&apos; ist kein Checkpoint-Name (step_ und 8 Ziffern).</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>A checkpoint of run %1 is being downloaded already.</source>
        <translation>Ein Checkpoint von Lauf %1 wird bereits heruntergeladen.</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Checkpoint of run %1: %2</source>
        <translation>Checkpoint von Lauf %1: %2</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>the run folder %1 on %2 holds no complete checkpoint</source>
        <translation>der Laufordner %1 auf %2 enthält keinen vollständigen Checkpoint</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>download cancelled</source>
        <translation>Download abgebrochen</translation>
    </message>
    <message>
        <location line="+11"/>
        <location line="+23"/>
        <source>Checkpoints of run %1: %2</source>
        <translation>Checkpoints von Lauf %1: %2</translation>
    </message>
</context>
<context>
    <name>td::gui::RunAgain</name>
    <message>
        <location filename="../gui/runs/run_again.cpp" line="+79"/>
        <source>&apos;%1&apos; is a symbolic link: a dataset&apos;s manifest must be a regular file.</source>
        <translation>&apos;%1&apos; ist ein symbolischer Link: das Manifest eines Datensatzes muss eine reguläre Datei sein.</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&apos;%1&apos; holds no manifest.json.</source>
        <translation>&apos;%1&apos; enthält keine manifest.json.</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>&apos;%1&apos; is not a dataset manifest (not a regular file of at most 64 MiB).</source>
        <translation>&apos;%1&apos; ist kein Datensatz-Manifest (keine reguläre Datei von höchstens 64 MiB).</translation>
    </message>
    <message>
        <location line="+2"/>
        <location line="+2"/>
        <source>Cannot read &apos;%1&apos;: %2</source>
        <translation>&apos;%1&apos; kann nicht gelesen werden: %2</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>The run&apos;s card names no dataset (its config has no data.path): start a run from the Design page.</source>
        <translation>Die Karte des Laufs nennt keinen Datensatz (seine Konfiguration hat kein data.path): starten Sie einen Lauf auf der Seite Entwurf.</translation>
    </message>
    <message>
        <location line="+30"/>
        <source>The run trained on the dataset %1 on its node; no dataset named %2 is registered on this machine: prepare or add it on the Data page first.</source>
        <translation>Der Lauf trainierte auf seinem Knoten mit dem Datensatz %1; auf diesem Rechner ist kein Datensatz namens %2 registriert: bereiten Sie ihn zuerst auf der Seite Daten vor oder fügen Sie ihn hinzu.</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>The dataset %1 is gone (%2): prepare it again on the Data page, or start a run on another dataset from the Design page.</source>
        <translation>Der Datensatz %1 ist nicht mehr da (%2): bereiten Sie ihn auf der Seite Daten erneut vor, oder starten Sie auf der Seite Entwurf einen Lauf mit einem anderen Datensatz.</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>This run was recorded without its dataset&apos;s hash (an older TrainDeck): whether %1 is still the data it read cannot be checked.</source>
        <translation>Dieser Lauf wurde ohne den Hash seines Datensatzes aufgezeichnet (ein älteres TrainDeck): ob %1 noch die Daten sind, die er las, lässt sich nicht prüfen.</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>The dataset %1 has changed since this run: its manifest.json&apos;s SHA-256 is %2… now, the run read %3…. A new run trains on the data as it is now, so its losses will differ.</source>
        <translation>Der Datensatz %1 hat sich seit diesem Lauf geändert: der SHA-256 seiner manifest.json ist jetzt %2…, der Lauf las %3…. Ein neuer Lauf trainiert mit den Daten, wie sie jetzt sind; seine Verluste werden sich daher unterscheiden.</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>The store does not say where run %1 ran.</source>
        <translation>Die Datenbank sagt nicht, wo Lauf %1 lief.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>save it again on the Clusters page, or start the run from the Design page</source>
        <translation>speichern Sie ihn auf der Seite Cluster erneut, oder starten Sie den Lauf auf der Seite Entwurf</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The cluster %1 that run %2 ran on is no longer saved: %3.</source>
        <translation>Der Cluster %1, auf dem Lauf %2 lief, ist nicht mehr gespeichert: %3.</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>The cluster %1 is no longer a %2 cluster: %3.</source>
        <translation>Der Cluster %1 ist kein %2-Cluster mehr: %3.</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The cluster %1 has fewer than two nodes now: %2.</source>
        <translation>Der Cluster %1 hat jetzt weniger als zwei Knoten: %2.</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The node run %1 ran on is not readable in the store (%2).</source>
        <translation>Der Knoten, auf dem Lauf %1 lief, ist in der Datenbank nicht lesbar (%2).</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>The node %1 is no longer in the cluster %2: %3.</source>
        <translation>Der Knoten %1 ist nicht mehr im Cluster %2: %3.</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>The run&apos;s card is not loaded yet: try again in a moment.</source>
        <translation>Die Karte des Laufs ist noch nicht geladen: versuchen Sie es gleich noch einmal.</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>No run targets: nothing can start a run.</source>
        <translation>Keine Laufziele: nichts kann einen Lauf starten.</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Run %1 has no readable config in the store: it cannot be run again.</source>
        <translation>Lauf %1 hat keine lesbare Konfiguration in der Datenbank: er kann nicht erneut gestartet werden.</translation>
    </message>
</context>
<context>
    <name>td::gui::RunCardTab</name>
    <message>
        <location filename="../gui/app/run_card_tab.cpp" line="+105"/>
        <location line="+62"/>
        <source>Run again</source>
        <translation>Erneut starten</translation>
    </message>
    <message>
        <location line="-56"/>
        <source>not recorded</source>
        <translation>nicht aufgezeichnet</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>%1 (here: %2)</source>
        <translation>%1 (hier: %2)</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>unchanged since the run</source>
        <translation>seit dem Lauf unverändert</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>changed since the run</source>
        <translation>seit dem Lauf geändert</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>dataset not found</source>
        <translation>Datensatz nicht gefunden</translation>
    </message>
    <message>
        <location line="+5"/>
        <location line="+6"/>
        <source>%1 (%2)</source>
        <translation>%1 (%2)</translation>
    </message>
    <message>
        <location line="-4"/>
        <source>%L1 train · %L2 validation</source>
        <translation>%L1 Training · %L2 Validierung</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>%1 · %2</source>
        <translation>%1 · %2</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>this machine</source>
        <translation>dieser Rechner</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Slurm cluster %1</source>
        <translation>Slurm-Cluster %1</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>every node of %1</source>
        <translation>alle Knoten von %1</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>%1 / %2</source>
        <translation>%1 / %2</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The run&apos;s start has not been recorded yet: its card fills in once the engine starts.</source>
        <translation>Der Start des Laufs ist noch nicht aufgezeichnet: seine Karte füllt sich, sobald die Engine startet.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Run again anyway</source>
        <translation>Trotzdem erneut starten</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Seed:</source>
        <translation>Seed:</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Dataset:</source>
        <translation>Datensatz:</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Manifest SHA-256:</source>
        <translation>Manifest-SHA-256:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tokens:</source>
        <translation>Tokens:</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Engine:</source>
        <translation>Engine:</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Host:</source>
        <translation>Host:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Device:</source>
        <translation>Gerät:</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>World size:</source>
        <translation>World size:</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Ran on:</source>
        <translation>Lief auf:</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Start a new run with exactly this card: the same config and seed, in the same experiment, where this run went</source>
        <translation>Einen neuen Lauf mit genau dieser Karte starten: dieselbe Konfiguration und derselbe Seed, im selben Experiment, dort, wo dieser Lauf lief</translation>
    </message>
</context>
<context>
    <name>td::gui::RunController</name>
    <message>
        <location filename="../gui/runs/run_controller.cpp" line="+38"/>
        <source>Run %1: %2</source>
        <translation>Lauf %1: %2</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>The design has no dataset (data.path): prepare one on the Data page, then pick it.</source>
        <translation>Der Entwurf hat keinen Datensatz (data.path): Bereiten Sie einen auf der Seite „Daten“ vor und wählen Sie ihn dann aus.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>&apos;%1&apos; holds no prepared dataset (no manifest.json): prepare it on the Data page, or pick another dataset.</source>
        <translation>&apos;%1&apos; enthält keinen vorbereiteten Datensatz (keine manifest.json): Bereiten Sie ihn auf der Seite „Daten“ vor oder wählen Sie einen anderen Datensatz.</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Cannot read the dataset manifest &apos;%1&apos;.</source>
        <translation>Das Datensatz-Manifest &apos;%1&apos; kann nicht gelesen werden.</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>The dataset manifest &apos;%1&apos; is damaged (no tokenizer.vocab_size): prepare the dataset again.</source>
        <translation>Das Datensatz-Manifest &apos;%1&apos; ist beschädigt (kein tokenizer.vocab_size): Bereiten Sie den Datensatz erneut vor.</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>model.vocab_size is %1 but the dataset &apos;%2&apos; has %3 tokens in its tokenizer: set vocab_size to %3.</source>
        <translation>model.vocab_size ist %1, aber der Tokenizer des Datensatzes &apos;%2&apos; hat %3 Tokens: Setzen Sie vocab_size auf %3.</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>This machine</source>
        <translation>Dieser Rechner</translation>
    </message>
    <message>
        <location line="+11"/>
        <location line="+116"/>
        <source>No store is open.</source>
        <translation>Keine Datenbank geöffnet.</translation>
    </message>
    <message>
        <location line="-103"/>
        <source>Cannot create the run folder &apos;%1&apos; (%2): check that its parent is writable.</source>
        <translation>Der Laufordner &apos;%1&apos; kann nicht angelegt werden (%2): Prüfen Sie, ob der übergeordnete Ordner beschreibbar ist.</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>The training engine (traindeck-engine) was not found. Build it (cmake --build build) or set TRAINDECK_ENGINE to its path.</source>
        <translation>Die Trainings-Engine (traindeck-engine) wurde nicht gefunden. Bauen Sie sie (cmake --build build) oder setzen Sie TRAINDECK_ENGINE auf ihren Pfad.</translation>
    </message>
    <message>
        <location line="+50"/>
        <source>Run %1 is not running here.</source>
        <translation>Lauf %1 läuft nicht hier.</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Run %1: its engine process %2 is gone.</source>
        <translation>Lauf %1: Sein Engine-Prozess %2 existiert nicht mehr.</translation>
    </message>
    <message>
        <location line="-88"/>
        <source>This machine&apos;s target cannot start a run on cluster %1.</source>
        <translation>Das Ziel „dieser Rechner“ kann keinen Lauf auf dem Cluster %1 starten.</translation>
    </message>
    <message>
        <location line="+125"/>
        <location line="+17"/>
        <source>Run %1 is still running.</source>
        <translation>Lauf %1 läuft noch.</translation>
    </message>
    <message>
        <location line="-4"/>
        <source>Run %1 is not in this store.</source>
        <translation>Lauf %1 ist nicht in dieser Datenbank.</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Run %1 ran on an SSH node; it resumes there (Run page, Resume).</source>
        <translation>Lauf %1 lief auf einem SSH-Knoten; er wird dort fortgesetzt (Seite „Lauf“, „Fortsetzen“).</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Run %1 has no run folder on this machine; it cannot be resumed here.</source>
        <translation>Lauf %1 hat auf diesem Rechner keinen Laufordner; er kann hier nicht fortgesetzt werden.</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Run %1 has no config.json and the store has no config for it.</source>
        <translation>Lauf %1 hat keine config.json, und die Datenbank hat keine Konfiguration für ihn.</translation>
    </message>
</context>
<context>
    <name>td::gui::RunTarget</name>
    <message>
        <location filename="../gui/runs/run_targets.cpp" line="+21"/>
        <source>The run name is refused: %1</source>
        <translation>Der Laufname wird abgelehnt: %1</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Run %1&apos;s checkpoints are not kept away from this machine: the Checkpoints tab reads them here.</source>
        <translation>Die Checkpoints von Lauf %1 liegen auf diesem Rechner: Der Reiter Checkpoints liest sie hier.</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Run %1&apos;s checkpoints are on this machine already.</source>
        <translation>Die Checkpoints von Lauf %1 liegen bereits auf diesem Rechner.</translation>
    </message>
    <message>
        <location filename="../gui/runs/remote_target_base.cpp" line="-321"/>
        <source>The training engine (traindeck-engine) was not found. Build it (cmake --build build) or set TRAINDECK_ENGINE to its path.</source>
        <translation>Die Trainings-Engine (traindeck-engine) wurde nicht gefunden. Bauen Sie sie (cmake --build build) oder setzen Sie TRAINDECK_ENGINE auf ihren Pfad.</translation>
    </message>
</context>
<context>
    <name>td::gui::RunTargets</name>
    <message>
        <location filename="../gui/runs/run_targets.cpp" line="+79"/>
        <source>Nothing here can start a run on a target of kind &quot;%1&quot;.</source>
        <translation>Hier kann nichts einen Lauf auf einem Ziel der Art „%1“ starten.</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Run %1 is not running here.</source>
        <translation>Lauf %1 läuft nicht hier.</translation>
    </message>
    <message>
        <location line="+21"/>
        <source>Run %1 is still running.</source>
        <translation>Lauf %1 läuft noch.</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Run %1 cannot be resumed: </source>
        <translation>Lauf %1 kann nicht fortgesetzt werden: </translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Checkpoints of run %1: </source>
        <translation>Checkpoints von Lauf %1: </translation>
    </message>
    <message>
        <location line="+7"/>
        <source>A checkpoint of run %1 is being downloaded already.</source>
        <translation>Ein Checkpoint von Lauf %1 wird bereits heruntergeladen.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Checkpoint of run %1: </source>
        <translation>Checkpoint von Lauf %1: </translation>
    </message>
    <message>
        <location line="-51"/>
        <location line="+19"/>
        <source>No store is open.</source>
        <translation>Keine Datenbank geöffnet.</translation>
    </message>
    <message>
        <location line="-13"/>
        <source>Run %1 ran on a target of kind &quot;%2&quot;, which this TrainDeck cannot reach.</source>
        <translation>Lauf %1 lief auf einem Ziel der Art „%2“, das dieses TrainDeck nicht erreicht.</translation>
    </message>
    <message>
        <source>Run %1 cannot be resumed: %2</source>
        <translation type="vanished">Lauf %1 kann nicht fortgesetzt werden: %2</translation>
    </message>
</context>
<context>
    <name>td::gui::RunText</name>
    <message>
        <location filename="../gui/core/run_text.cpp" line="+29"/>
        <source>reached train.steps</source>
        <translation>train.steps erreicht</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>stop requested (signal)</source>
        <translation>Stopp angefordert (Signal)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>time limit</source>
        <translation>Zeitlimit</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>3 steps in a row had a non-finite loss or gradient norm; lower train.lr or check the data.</source>
        <translation>3 Schritte in Folge hatten einen nicht endlichen Verlust oder eine nicht endliche Gradientennorm; verringern Sie train.lr oder prüfen Sie die Daten.</translation>
    </message>
    <message>
        <location line="+5"/>
        <source> The newest checkpoint that verifies is step %1 (%2): continue with --resume (the %3 newer do not verify), or from an older step with --resume-from STEP.</source>
        <translation> Der neueste Checkpoint mit gültiger Prüfsumme ist Schritt %1 (%2): Fortsetzen mit --resume (die %3 neueren sind ungültig) oder von einem älteren Schritt mit --resume-from STEP.</translation>
    </message>
    <message>
        <location line="+5"/>
        <source> The newest checkpoint that verifies is step %1 (%2): continue with --resume, or from an older step with --resume-from STEP.</source>
        <translation> Der neueste Checkpoint mit gültiger Prüfsumme ist Schritt %1 (%2): Fortsetzen mit --resume oder von einem älteren Schritt mit --resume-from STEP.</translation>
    </message>
    <message>
        <location line="+5"/>
        <source> No checkpoint verifies (%1): start again in a new --out.</source>
        <translation> Kein Checkpoint hat eine gültige Prüfsumme (%1): Beginnen Sie neu mit einem neuen --out.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>the engine process %1 ended without a run_end event: %2</source>
        <translation>der Engine-Prozess %1 endete ohne run_end-Ereignis: %2</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>the engine process %1 ended without a run_end event</source>
        <translation>der Engine-Prozess %1 endete ohne run_end-Ereignis</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>job %1: %2</source>
        <translation>Job %1: %2</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>the engine process (pid %1) on the node ended without a run_end event; last lines of %2:
%3</source>
        <translation>der Engine-Prozess (PID %1) auf dem Knoten endete ohne run_end-Ereignis; letzte Zeilen von %2:
%3</translation>
    </message>
    <message>
        <location line="+23"/>
        <source>unknown</source>
        <translation>unbekannt</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>running</source>
        <translation>läuft</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>completed</source>
        <translation>abgeschlossen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>stopped</source>
        <translation>gestoppt</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>failed</source>
        <translation>fehlgeschlagen</translation>
    </message>
</context>
<context>
    <name>td::gui::RunView</name>
    <message>
        <location filename="../gui/app/run_view.cpp" line="+72"/>
        <location line="+340"/>
        <source>No run selected. Start one from the Design page, or pick one in the sidebar.</source>
        <translation>Kein Lauf ausgewählt. Starten Sie einen auf der Seite „Entwurf“ oder wählen Sie einen in der Seitenleiste.</translation>
    </message>
    <message>
        <location line="-205"/>
        <source>Download the newest checkpoint into</source>
        <translation>Neuesten Checkpoint herunterladen nach</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Stop</source>
        <translation>Anhalten</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Stop gracefully: finish the step, write a checkpoint, exit (Ctrl+.)</source>
        <translation>Sauber anhalten: Schritt beenden, Checkpoint schreiben, beenden (Strg+.)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Resume</source>
        <translation>Fortsetzen</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+247"/>
        <source>Continue from the newest checkpoint</source>
        <translation>Vom neuesten Checkpoint aus fortsetzen</translation>
    </message>
    <message>
        <location line="-246"/>
        <source>Generated samples appear here with their step (train.sample_interval).</source>
        <translation>Erzeugte Samples erscheinen hier mit ihrem Schritt (train.sample_interval).</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Samples</source>
        <translation>Samples</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Log</source>
        <translation>Protokoll</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Refresh</source>
        <translation>Aktualisieren</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Read the chosen rank&apos;s log again</source>
        <translation>Das Log des gewählten Rangs neu lesen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Whose log: every rank of a run writes its own</source>
        <translation>Wessen Log: Jeder Rang eines Laufs schreibt sein eigenes</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Plan vs measured</source>
        <translation>Plan vs. Messung</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>What the planner says this run&apos;s config needs, beside what the run measured</source>
        <translation>Was der Planer für die Konfiguration dieses Laufs veranschlagt, neben dem, was der Lauf gemessen hat</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Checkpoints</source>
        <translation>Checkpoints</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The run&apos;s checkpoints: keep or delete them, generate text, export for Hugging Face</source>
        <translation>Die Checkpoints des Laufs: behalten oder löschen, Text generieren, für Hugging Face exportieren</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Card</source>
        <translation>Karte</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>What reproduces this run (seed, dataset, engine, device) and Run again</source>
        <translation>Was diesen Lauf reproduziert (Seed, Datensatz, Engine, Gerät) und Erneut starten</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Quantity</source>
        <translation>Größe</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Planned</source>
        <translation>Geplant</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Measured</source>
        <translation>Gemessen</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Error</source>
        <translation>Fehler</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Cancel</source>
        <translation>Abbrechen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Download checkpoint</source>
        <translation>Checkpoint herunterladen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Copy the run&apos;s newest checkpoint from its node to a folder on this machine</source>
        <translation>Den neuesten Checkpoint des Laufs von seinem Knoten in einen Ordner auf diesem Rechner kopieren</translation>
    </message>
    <message>
        <location line="+35"/>
        <source>downloading the checkpoint</source>
        <translation>Checkpoint wird heruntergeladen</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>checkpoint saved in %1</source>
        <translation>Checkpoint in %1 gespeichert</translation>
    </message>
    <message>
        <location line="+28"/>
        <source>connecting to %1</source>
        <translation>Verbindung zu %1 wird hergestellt</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>%1 of %2 MB</source>
        <translation>%1 von %2 MB</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Node %1</source>
        <translation>Knoten %1</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Cluster %1</source>
        <translation>Cluster %1</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>not followed</source>
        <translation>nicht verfolgt</translation>
    </message>
    <message>
        <location line="+99"/>
        <source>Run %1 (starting…)</source>
        <translation>Lauf %1 (startet…)</translation>
    </message>
    <message>
        <location line="+6"/>
        <source> · best val loss %1</source>
        <translation> · bester Val-Verlust %1</translation>
    </message>
    <message numerus="yes">
        <location line="+5"/>
        <source> · %n malformed event line(s) skipped</source>
        <translation>
            <numerusform> · %n fehlerhafte Ereigniszeile übersprungen</numerusform>
            <numerusform> · %n fehlerhafte Ereigniszeilen übersprungen</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location line="+8"/>
        <source>%n job(s): %1</source>
        <translation>
            <numerusform>%n Job: %1</numerusform>
            <numerusform>%n Jobs: %1</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location line="+238"/>
        <source>Slowest rank: %1%2, %3 % slower than rank %4 over the last %n step(s) (the slowest in %5 of them)</source>
        <translation>
            <numerusform>Langsamster Rank: %1%2, %3 % langsamer als Rank %4 im letzten %n Schritt (in %5 davon der langsamste)</numerusform>
            <numerusform>Langsamster Rank: %1%2, %3 % langsamer als Rank %4 in den letzten %n Schritten (in %5 davon der langsamste)</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location line="+4"/>
        <source>Slowest rank: %1%2, %3 % slower than the median of the other ranks over the last %n step(s) (the slowest in %4 of them)</source>
        <translation>
            <numerusform>Langsamster Rank: %1%2, %3 % langsamer als der Median der anderen Ranks im letzten %n Schritt (in %4 davon der langsamste)</numerusform>
            <numerusform>Langsamster Rank: %1%2, %3 % langsamer als der Median der anderen Ranks in den letzten %n Schritten (in %4 davon der langsamste)</numerusform>
        </translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Each rank&apos;s compute time is its step time outside collectives (ranks[].compute_ms = step_ms - comm_ms): the ranks wait for the slowest one in the gradient all-reduce. Medians over the steps: rank %1 %2 ms, the other ranks %3 ms.</source>
        <translation>Die Rechenzeit eines Ranks ist seine Schrittzeit außerhalb der kollektiven Operationen (ranks[].compute_ms = step_ms - comm_ms): Im All-Reduce der Gradienten warten die Ranks auf den langsamsten. Mediane über die Schritte: Rank %1 %2 ms, die anderen Ranks %3 ms.</translation>
    </message>
    <message>
        <location line="-246"/>
        <source>This run wrote no checkpoint: start a new run instead</source>
        <translation>Dieser Lauf hat keinen Checkpoint geschrieben: Starten Sie stattdessen einen neuen Lauf</translation>
    </message>
    <message>
        <location line="+58"/>
        <source>Step %1</source>
        <translation>Schritt %1</translation>
    </message>
    <message>
        <location line="-15"/>
        <source>(no engine log at %1: runs started outside TrainDeck log to their own terminal)</source>
        <translation>(kein Engine-Protokoll unter %1: Außerhalb von TrainDeck gestartete Läufe protokollieren in ihr eigenes Terminal)</translation>
    </message>
    <message numerus="yes">
        <location line="-35"/>
        <source>%n alert(s), newest: %1: %2</source>
        <translation>
            <numerusform>%n Alarm, der neueste: %1: %2</numerusform>
            <numerusform>%n Alarme, der neueste: %1: %2</numerusform>
        </translation>
    </message>
    <message>
        <location line="+66"/>
        <source>%1 (its last %2 KiB)</source>
        <translation>%1 (die letzten %2 KiB)</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Rank 0 (engine.log, live)</source>
        <translation>Rang 0 (engine.log, live)</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Rank %1</source>
        <translation>Rang %1</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>The logs of other ranks cannot be read here.</source>
        <translation>Die Logs anderer Ränge können hier nicht gelesen werden.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Reading the log of rank %1…</source>
        <translation>Lese das Log von Rang %1 …</translation>
    </message>
    <message>
        <location line="+34"/>
        <source>reads %1 MB/s</source>
        <translation>liest %1 MB/s</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>no read took measurable time</source>
        <translation>kein Lesen dauerte messbar lange</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Input-bound: the steps waited for data %1 % of their time (steps %2–%3)</source>
        <translation>Eingabegebunden: die Schritte warteten %1 % ihrer Zeit auf Daten (Schritte %2–%3)</translation>
    </message>
    <message numerus="yes">
        <location line="+20"/>
        <source>Time waiting for the data loader (data_wait_ms) over the step time (step_ms), summed over %n step(s): %1 ms of %2 ms. A run is input-bound from %3 % (TensorFlow Profiler&apos;s limit); the read speed is the median data_read_mb_s of those steps.</source>
        <translation>
            <numerusform>Wartezeit auf den Datenlader (data_wait_ms) durch die Schrittzeit (step_ms), summiert über %n Schritt: %1 ms von %2 ms. Ein Lauf ist ab %3 % eingabegebunden (die Grenze des TensorFlow Profilers); die Lesegeschwindigkeit ist der Median von data_read_mb_s dieser Schritte.</numerusform>
            <numerusform>Wartezeit auf den Datenlader (data_wait_ms) durch die Schrittzeit (step_ms), summiert über %n Schritte: %1 ms von %2 ms. Ein Lauf ist ab %3 % eingabegebunden (die Grenze des TensorFlow Profilers); die Lesegeschwindigkeit ist der Median von data_read_mb_s dieser Schritte.</numerusform>
        </translation>
    </message>
    <message>
        <location line="+43"/>
        <source>Planned tokens/s assume MFU %1 % (the Infrastructure panel&apos;s default); memory is the plan plus the 32 MiB cuBLAS workspace, against the GPU memory high-water mark.</source>
        <translation>Geplante tokens/s nehmen MFU %1 % an (Standard des Bereichs „Infrastruktur“); Speicher ist der Plan plus 32 MiB cuBLAS-Workspace, verglichen mit dem Höchststand des GPU-Speichers.</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Planned tokens/s assume MFU %1 % (the designer&apos;s default for this machine); memory is the plan plus a 16 MiB process baseline, against the peak RSS.</source>
        <translation>Geplante tokens/s nehmen MFU %1 % an (Standard des Entwurfs für diesen Rechner); Speicher ist der Plan plus 16 MiB Prozess-Grundbedarf, verglichen mit der RSS-Spitze.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Error = (planned − measured) ÷ measured. Hover a row for its formula (docs/planner.md).</source>
        <translation>Fehler = (geplant − gemessen) ÷ gemessen. Fahren Sie mit der Maus über eine Zeile, um ihre Formel zu sehen (docs/planner.md).</translation>
    </message>
    <message>
        <location line="-169"/>
        <source>(the engine has written nothing to %1 yet)</source>
        <translation>(die Engine hat noch nichts in %1 geschrieben)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>(no engine log at %1 yet: the engine&apos;s output appears here as it arrives)</source>
        <translation>(noch kein Engine-Protokoll unter %1: Die Ausgabe der Engine erscheint hier, sobald sie eintrifft)</translation>
    </message>
    <message>
        <location line="-72"/>
        <source>Run %1 · %2 · %3</source>
        <translation>Lauf %1 · %2 · %3</translation>
    </message>
    <message>
        <location line="+48"/>
        <source>%1 min</source>
        <translation>%1 min</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>step %1 / %2</source>
        <translation>Schritt %1 / %2</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>step %1</source>
        <translation>Schritt %1</translation>
    </message>
    <message>
        <location line="+1"/>
        <source> (%1 %)</source>
        <translation> (%1 %)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source> · %1 elapsed</source>
        <translation> · %1 vergangen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source> · ~%1 left</source>
        <translation> · noch ~%1</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>%1 tokens/s (median of last %2 steps)</source>
        <translation>%1 Tokens/s (Median der letzten %2 Schritte)</translation>
    </message>
</context>
<context>
    <name>td::gui::SampleJob</name>
    <message>
        <location filename="../gui/runs/checkpoint_jobs.cpp" line="-116"/>
        <source>A generation is already running: stop it first.</source>
        <translation>Eine Generierung läuft bereits: halten Sie sie zuerst an.</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>traindeck-engine was not found (set TRAINDECK_ENGINE to its path).</source>
        <translation>traindeck-engine wurde nicht gefunden (setzen Sie TRAINDECK_ENGINE auf seinen Pfad).</translation>
    </message>
    <message>
        <location line="+30"/>
        <source>cannot start %1: %2</source>
        <translation>%1 kann nicht gestartet werden: %2</translation>
    </message>
</context>
<context>
    <name>td::gui::SecretDialog</name>
    <message>
        <location filename="../gui/cluster/prompt_dialogs.cpp" line="+12"/>
        <source>Password</source>
        <translation>Passwort</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Key passphrase</source>
        <translation>Schlüssel-Passphrase</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Password of %1:</source>
        <translation>Passwort für %1:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Passphrase of the key %1 (for %2):</source>
        <translation>Passphrase des Schlüssels %1 (für %2):</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>The node refused the previous password; type it again.</source>
        <translation>Der Knoten hat das vorige Passwort abgelehnt; geben Sie es erneut ein.</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The previous passphrase did not work; type it again.</source>
        <translation>Die vorige Passphrase hat nicht funktioniert; geben Sie sie erneut ein.</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Remember in the system keyring</source>
        <translation>Im Schlüsselbund des Systems speichern</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>No system keyring is running: you will be asked again next time.</source>
        <translation>Es läuft kein Schlüsselbund des Systems: Sie werden beim nächsten Mal erneut gefragt.</translation>
    </message>
</context>
<context>
    <name>td::gui::Sidebar</name>
    <message>
        <location filename="../gui/app/sidebar.cpp" line="+84"/>
        <source>Search experiments, runs, status…</source>
        <translation>Experimente, Läufe, Status suchen…</translation>
    </message>
    <message>
        <location line="+37"/>
        <source>New</source>
        <translation>Neu</translation>
    </message>
    <message>
        <location line="+0"/>
        <location line="+87"/>
        <source>New experiment</source>
        <translation>Neues Experiment</translation>
    </message>
    <message>
        <location line="-86"/>
        <source>Rename</source>
        <translation>Umbenennen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Notes</source>
        <translation>Notizen</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Notes and tags of the selected experiment or run</source>
        <translation>Notizen und Tags des ausgewählten Experiments oder Laufs</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete</source>
        <translation>Löschen</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Delete the selected runs or experiment</source>
        <translation>Die ausgewählten Läufe oder das Experiment löschen</translation>
    </message>
    <message>
        <location line="+84"/>
        <source>Name:</source>
        <translation>Name:</translation>
    </message>
    <message>
        <location line="+27"/>
        <source>Rename experiment</source>
        <translation>Experiment umbenennen</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>New name:</source>
        <translation>Neuer Name:</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Experiment %1</source>
        <translation>Experiment %1</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Run %1</source>
        <translation>Lauf %1</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Notes:</source>
        <translation>Notizen:</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>comma-separated, e.g. baseline, lr-sweep</source>
        <translation>durch Kommas getrennt, z. B. baseline, lr-sweep</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tags:</source>
        <translation>Tags:</translation>
    </message>
    <message>
        <location line="+20"/>
        <location line="+4"/>
        <source>Delete runs</source>
        <translation>Läufe löschen</translation>
    </message>
    <message>
        <location line="-4"/>
        <source>Run %1 is training: stop it before deleting it.</source>
        <translation>Lauf %1 trainiert gerade: Halten Sie ihn vor dem Löschen an.</translation>
    </message>
    <message numerus="yes">
        <location line="+5"/>
        <source>Delete %n run(s) and every number stored for them? Their run folders on disk are kept.</source>
        <translation>
            <numerusform>%n Lauf und alle dafür gespeicherten Zahlen löschen? Sein Laufordner auf der Festplatte bleibt erhalten.</numerusform>
            <numerusform>%n Läufe und alle dafür gespeicherten Zahlen löschen? Ihre Laufordner auf der Festplatte bleiben erhalten.</numerusform>
        </translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Delete experiment</source>
        <translation>Experiment löschen</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete experiment %1 with all its runs and their stored numbers? Run folders on disk are kept.</source>
        <translation>Experiment %1 mit allen seinen Läufen und deren gespeicherten Zahlen löschen? Die Laufordner auf der Festplatte bleiben erhalten.</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>New experiment…</source>
        <translation>Neues Experiment…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Rename…</source>
        <translation>Umbenennen…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Notes and tags…</source>
        <translation>Notizen und Tags…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete…</source>
        <translation>Löschen…</translation>
    </message>
    <message>
        <location line="-83"/>
        <source>Rename run %1</source>
        <translation>Lauf %1 umbenennen</translation>
    </message>
    <message>
        <location line="-176"/>
        <source>%1 · %2 %</source>
        <translation>%1 · %2 %</translation>
    </message>
    <message>
        <location line="+176"/>
        <source>Name (empty: show the run id):</source>
        <translation>Name (leer: die Lauf-ID zeigen):</translation>
    </message>
    <message>
        <location line="-101"/>
        <source>Rename the selected experiment or run (a run keeps its id)</source>
        <translation>Das gewählte Experiment oder den gewählten Lauf umbenennen (ein Lauf behält seine ID)</translation>
    </message>
</context>
<context>
    <name>td::gui::SlurmSettings</name>
    <message>
        <location filename="../gui/cluster/slurm_settings.cpp" line="+75"/>
        <source>the cluster&apos;s default partition</source>
        <translation>die Standardpartition des Clusters</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>sbatch --partition</source>
        <translation>sbatch --partition</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>your default account</source>
        <translation>Ihr Standardkonto</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>sbatch --account</source>
        <translation>sbatch --account</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>the default QoS</source>
        <translation>die Standard-QoS</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>sbatch --qos</source>
        <translation>sbatch --qos</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>the partition&apos;s default, e.g. 04:00:00 or 1-00:00:00</source>
        <translation>Standard der Partition, z. B. 04:00:00 oder 1-00:00:00</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>sbatch --time: minutes, HH:MM:SS or D-HH:MM:SS</source>
        <translation>sbatch --time: Minuten, HH:MM:SS oder T-HH:MM:SS</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>sbatch --nodes: nodes of one job</source>
        <translation>sbatch --nodes: Knoten eines Jobs</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>none (CPU partition)</source>
        <translation>keine (CPU-Partition)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>sbatch --gpus-per-node; one rank per GPU. None: one rank per node on its CPUs</source>
        <translation>sbatch --gpus-per-node; ein Rang je GPU. Keine: ein Rang je Knoten auf dessen CPUs</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Slurm&apos;s default</source>
        <translation>Standard von Slurm</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>sbatch --cpus-per-task: CPUs of each rank</source>
        <translation>sbatch --cpus-per-task: CPUs jedes Rangs</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Further sbatch directives, one a line, each starting with #SBATCH</source>
        <translation>Weitere sbatch-Direktiven, eine je Zeile, jede beginnt mit #SBATCH</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Shell lines run on the first node before the ranks start, e.g. module load ... (your own commands, run as written)</source>
        <translation>Shell-Zeilen, die auf dem ersten Knoten vor dem Start der Ränge laufen, z. B. module load ... (Ihre eigenen Befehle, unverändert ausgeführt)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>/scratch/&lt;you&gt;/traindeck</source>
        <translation>/scratch/&lt;name&gt;/traindeck</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>An absolute folder every node of the cluster sees (the engine, datasets and runs go there)</source>
        <translation>Ein absoluter Ordner, den jeder Knoten des Clusters sieht (Engine, Datensätze und Läufe kommen dorthin)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Continue in a new job after the time limit (requeue)</source>
        <translation>Nach dem Zeitlimit in einem neuen Job weitermachen (requeue)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The run checkpoints before its time limit; the job then submits itself again and the run goes on from that checkpoint until its last step</source>
        <translation>Der Lauf speichert vor seinem Zeitlimit einen Checkpoint; der Job reicht sich dann erneut ein und der Lauf geht von diesem Checkpoint bis zu seinem letzten Schritt weiter</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>sbatch --signal=USR1@S: seconds before the time limit the run is asked to checkpoint and stop</source>
        <translation>sbatch --signal=USR1@S: Sekunden vor dem Zeitlimit, zu denen der Lauf einen Checkpoint speichern und anhalten soll</translation>
    </message>
    <message>
        <location line="+1"/>
        <source> s</source>
        <translation> s</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Run each rank&apos;s engine in this image on the compute nodes instead of the engine bundle; empty image: the bundle</source>
        <translation>Die Engine jedes Rangs auf den Rechenknoten in diesem Image statt im Engine-Bundle ausführen; leeres Image: das Bundle</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Partition:</source>
        <translation>Partition:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Account:</source>
        <translation>Konto:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>QoS:</source>
        <translation>QoS:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Time limit:</source>
        <translation>Zeitlimit:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Nodes:</source>
        <translation>Knoten:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>GPUs per node:</source>
        <translation>GPUs je Knoten:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>CPUs per task:</source>
        <translation>CPUs je Task:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Extra #SBATCH lines:</source>
        <translation>Weitere #SBATCH-Zeilen:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Set-up lines:</source>
        <translation>Einrichtungszeilen:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Work directory:</source>
        <translation>Arbeitsverzeichnis:</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Signal lead:</source>
        <translation>Signalvorlauf:</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Container:</source>
        <translation>Container:</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Batch script of a run called %1 (the engine&apos;s folder shown as &lt;bundle&gt;):</source>
        <translation>Batch-Skript eines Laufs namens %1 (der Ordner der Engine als &lt;bundle&gt; gezeigt):</translation>
    </message>
    <message>
        <location line="+82"/>
        <source>No batch script yet: %1</source>
        <translation>Noch kein Batch-Skript: %1</translation>
    </message>
</context>
<context>
    <name>td::gui::SlurmSubmitDialog</name>
    <message>
        <location filename="../gui/cluster/slurm_submit_dialog.cpp" line="+22"/>
        <source>Submit to %1</source>
        <translation>An %1 einreichen</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Submit job</source>
        <translation>Job einreichen</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>%1 is not a Slurm cluster.</source>
        <translation>%1 ist kein Slurm-Cluster.</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>This run cannot be submitted: %1</source>
        <translation>Dieser Lauf kann nicht eingereicht werden: %1</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>(no login node)</source>
        <translation>(kein Login-Knoten)</translation>
    </message>
    <message numerus="yes">
        <location line="+2"/>
        <source>Cluster %1 through the login node %2 · partition %3 · %n node(s)</source>
        <translation>
            <numerusform>Cluster %1 über den Login-Knoten %2 · Partition %3 · %n Knoten</numerusform>
            <numerusform>Cluster %1 über den Login-Knoten %2 · Partition %3 · %n Knoten</numerusform>
        </translation>
    </message>
    <message>
        <location line="+1"/>
        <source>(default)</source>
        <translation>(Standard)</translation>
    </message>
    <message numerus="yes">
        <location line="+1"/>
        <source>%n rank(s)</source>
        <translation>
            <numerusform>%n Rang</numerusform>
            <numerusform>%n Ränge</numerusform>
        </translation>
    </message>
    <message>
        <location line="+1"/>
        <source>the partition&apos;s time limit</source>
        <translation>das Zeitlimit der Partition</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>time limit %1</source>
        <translation>Zeitlimit %1</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>continues in a new job after a time limit</source>
        <translation>läuft nach einem Zeitlimit in einem neuen Job weiter</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The batch script below is submitted with sbatch once the engine, the dataset and the config are in %1 (the run id and the engine&apos;s folder, shown as %2 and &lt;bundle&gt;, are filled in then). It is kept in the run folder.</source>
        <translation>Das Batch-Skript unten wird mit sbatch eingereicht, sobald Engine, Datensatz und Konfiguration in %1 liegen (die Lauf-ID und der Ordner der Engine, hier %2 und &lt;bundle&gt;, werden dann eingesetzt). Es wird im Laufordner aufbewahrt.</translation>
    </message>
</context>
<context>
    <name>td::gui::SlurmTarget</name>
    <message>
        <source>No store is open.</source>
        <translation type="vanished">Keine Datenbank geöffnet.</translation>
    </message>
    <message>
        <source>No way to reach the cluster&apos;s login node is set up.</source>
        <translation type="vanished">Es ist kein Weg zum Login-Knoten des Clusters eingerichtet.</translation>
    </message>
    <message>
        <location filename="../gui/runs/slurm_target.cpp" line="-119"/>
        <source>This is not a Slurm cluster.</source>
        <translation>Dies ist kein Slurm-Cluster.</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The cluster %1 cannot be used: %2</source>
        <translation>Der Cluster %1 kann nicht verwendet werden: %2</translation>
    </message>
    <message>
        <source>The training engine (traindeck-engine) was not found. Build it or set TRAINDECK_ENGINE to its path.</source>
        <translation type="vanished">Die Trainings-Engine (traindeck-engine) wurde nicht gefunden. Bauen Sie sie oder setzen Sie TRAINDECK_ENGINE auf ihren Pfad.</translation>
    </message>
    <message>
        <location line="-33"/>
        <source>%1 nodes × %2 GPUs</source>
        <translation>%1 Knoten × %2 GPUs</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1 CPU nodes</source>
        <translation>%1 CPU-Knoten</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1 (Slurm, %2)</source>
        <translation>%1 (Slurm, %2)</translation>
    </message>
    <message>
        <location line="+57"/>
        <source>preparing</source>
        <translation>wird vorbereitet</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>job %1 submitted</source>
        <translation>Job %1 eingereicht</translation>
    </message>
    <message>
        <location line="+40"/>
        <location line="+7"/>
        <source>Run %1 on %2: %3</source>
        <translation>Lauf %1 auf %2: %3</translation>
    </message>
    <message>
        <source>Run %1 is not followed here.</source>
        <translation type="vanished">Lauf %1 wird hier nicht verfolgt.</translation>
    </message>
    <message>
        <source>stopping</source>
        <translation type="vanished">wird angehalten</translation>
    </message>
    <message>
        <source>Run %1 is still running.</source>
        <translation type="vanished">Lauf %1 läuft noch.</translation>
    </message>
    <message>
        <source>Run %1 is not in this store.</source>
        <translation type="vanished">Lauf %1 ist nicht in dieser Datenbank.</translation>
    </message>
    <message>
        <source>Run %1 did not run on a Slurm cluster.</source>
        <translation type="vanished">Lauf %1 lief nicht auf einem Slurm-Cluster.</translation>
    </message>
    <message>
        <source>Run %1 has completed: start a new run to train further.</source>
        <translation type="vanished">Lauf %1 ist abgeschlossen: Starten Sie einen neuen Lauf, um weiter zu trainieren.</translation>
    </message>
</context>
<context>
    <name>td::gui::Theme</name>
    <message>
        <location filename="../gui/look/theme.cpp" line="+78"/>
        <source>Light</source>
        <translation>Hell</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Dark</source>
        <translation>Dunkel</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>System</source>
        <translation>System</translation>
    </message>
</context>
<context>
    <name>td::gui::compare_format</name>
    <message>
        <location filename="../gui/compare/compare_format.cpp" line="+33"/>
        <source>%1 s</source>
        <translation>%1 s</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>%1 min %2 s</source>
        <translation>%1 min %2 s</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1 h %2 min</source>
        <translation>%1 h %2 min</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1 d %2 h</source>
        <translation>%1 T %2 h</translation>
    </message>
</context>
</TS>
