#include "database_dialog.h"

#include "io/clickhouse.h"
#include "io/collector_csv.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>

namespace prism::ui {

DatabaseDialog::DatabaseDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Open Database"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("Flow records in a ClickHouse table (docs/FORMATS.md, \"ClickHouse table\"); "
                                "<code>llmprism-cli export-clickhouse</code> fills one from any capture."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    auto* form = new QFormLayout;
    QSettings settings;
    m_url = new QLineEdit(settings.value("database/url").toString(), this);
    m_url->setObjectName("databaseUrl");
    m_url->setPlaceholderText("clickhouse://HOST:8123/DATABASE.TABLE");
    m_url->setMinimumWidth(420);
    form->addRow(tr("&Table:"), m_url);
    auto* topologyRow = new QHBoxLayout;
    m_topology = new QLineEdit(settings.value("database/topology").toString(), this);
    m_topology->setObjectName("databaseTopology");
    m_topology->setPlaceholderText(tr("topology.json of the cluster (optional)"));
    auto* browse = new QPushButton(tr("Browse…"), this);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Topology"), m_topology->text(), tr("JSON (*.json);;All files (*)"));
        if (!f.isEmpty()) m_topology->setText(f);
    });
    topologyRow->addWidget(m_topology);
    topologyRow->addWidget(browse);
    auto* topologyLabel = new QLabel(tr("T&opology:"), this);
    topologyLabel->setBuddy(m_topology); // a row holding a layout gets no buddy of its own
    form->addRow(topologyLabel, topologyRow);
    m_from = new QLineEdit(this);
    m_from->setObjectName("databaseFrom");
    m_from->setPlaceholderText(tr("first record's start (optional): 2024-01-02 03:04:05 UTC, or ns"));
    form->addRow(tr("&From:"), m_from);
    m_to = new QLineEdit(this);
    m_to->setObjectName("databaseTo");
    m_to->setPlaceholderText(tr("records starting before (optional)"));
    form->addRow(tr("T&o:"), m_to);
    layout->addLayout(form);
    m_error = new QLabel(this);
    m_error->setObjectName("databaseError");
    m_error->setWordWrap(true);
    m_error->setStyleSheet("color: #b00020");
    m_error->hide();
    layout->addWidget(m_error);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

QStringList DatabaseDialog::sources(QString* error) const {
    auto fail = [&](const QString& why) {
        if (error) *error = why;
        return QStringList();
    };
    std::string url = m_url->text().trimmed().toStdString();
    if (url.empty()) return fail(tr("Give the table as clickhouse://HOST:PORT/DATABASE.TABLE."));
    std::string params;
    for (auto [edit, key] : {std::pair{m_from, "from"}, std::pair{m_to, "to"}}) {
        const QString text = edit->text().trimmed();
        if (text.isEmpty()) continue;
        const auto t = parseUtcTime(text.toStdString());
        if (!t)
            return fail(tr("%1: \"%2\" is not a time: give nanoseconds since the epoch or a UTC time such as "
                           "2024-01-02 03:04:05.123.")
                            .arg(key == std::string("from") ? tr("From") : tr("To"), text));
        params.append(params.empty() ? "?" : "&").append(key).append("=").append(std::to_string(*t));
    }
    if (!params.empty()) {
        if (url.find('?') != std::string::npos) return fail(tr("Give the window in From and To, not in the URL too."));
        url += params;
    }
    try {
        ClickHouseUrl::parse(url);
    } catch (const InputError& e) {
        return fail(QString::fromStdString(e.issue().message));
    }
    QStringList out{QString::fromStdString(url)};
    const QString topology = m_topology->text().trimmed();
    if (!topology.isEmpty()) {
        if (!QFileInfo(topology).isFile()) return fail(tr("No topology file %1.").arg(topology));
        out << topology;
    }
    return out;
}

void DatabaseDialog::accept() {
    QString why;
    if (sources(&why).isEmpty()) {
        m_error->setText(why);
        m_error->show();
        return;
    }
    QSettings settings;
    settings.setValue("database/url", m_url->text().trimmed());
    settings.setValue("database/topology", m_topology->text().trimmed());
    QDialog::accept();
}

} // namespace prism::ui
